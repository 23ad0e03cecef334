"""Attributes the NNX layers keep: names, repr order and values."""

import re

import jax.numpy as jnp
import report
from flax import nnx


def r():
  return nnx.Rngs(0)


layers = {
  'Linear': lambda: nnx.Linear(2, 3, rngs=r()),
  'LinearGeneral': lambda: nnx.LinearGeneral(2, (3, 2), rngs=r()),
  'Conv': lambda: nnx.Conv(2, 3, (3,), rngs=r()),
  'ConvTranspose': lambda: nnx.ConvTranspose(2, 3, (3,), strides=2, rngs=r()),
  'Einsum': lambda: nnx.Einsum('ab,bc->ac', (2, 3), (3,), rngs=r()),
  'Embed': lambda: nnx.Embed(4, 3, rngs=r()),
  'Embed-bf16': lambda: nnx.Embed(4, 3, param_dtype=jnp.bfloat16, rngs=r()),
  'LayerNorm': lambda: nnx.LayerNorm(3, rngs=r()),
  'RMSNorm': lambda: nnx.RMSNorm(3, rngs=r()),
  'BatchNorm': lambda: nnx.BatchNorm(3, rngs=r()),
  'GroupNorm': lambda: nnx.GroupNorm(4, num_groups=2, rngs=r()),
  'InstanceNorm': lambda: nnx.InstanceNorm(3, rngs=r()),
  'Dropout': lambda: nnx.Dropout(0.5, rngs=r()),
  'Dropout-no-rngs': lambda: nnx.Dropout(0.5),
  'MHA': lambda: nnx.MultiHeadAttention(2, 4, decode=False, rngs=r()),
  'LoRALinear': lambda: nnx.LoRALinear(3, 4, lora_rank=2, rngs=r()),
  'LSTMCell': lambda: nnx.LSTMCell(2, 3, rngs=r()),
  'GRUCell': lambda: nnx.GRUCell(2, 3, rngs=r()),
  'SimpleCell': lambda: nnx.SimpleCell(2, 3, rngs=r()),
  'OptimizedLSTMCell': lambda: nnx.OptimizedLSTMCell(2, 3, rngs=r()),
  'RNN': lambda: nnx.RNN(nnx.GRUCell(2, 3, rngs=r())),
  'PReLU': lambda: nnx.PReLU(),
}
for name, make in layers.items():
  layer = make()
  report.value(
    f'{name}-vars', sorted(k for k in vars(layer) if not k.startswith('_'))
  )
  text = repr(layer)
  report.value(f'{name}-order', re.findall(r'^  ([a-z_]+)=', text, re.M))
  if name not in ('RNN', 'LoRALinear'):
    report.text(f'{name}-repr', text)
  report.tree(f'{name}-state', nnx.state(layer), values=False)
