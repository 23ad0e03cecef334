"""Linen and NNX LSTM/GRU cells agree on the same parameters."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx

x = jnp.linspace(-1, 1, 6).reshape(2, 3)
cell = nnx.LSTMCell(3, 4, rngs=nnx.Rngs(0))
gates = {
  'ii': 'ii',
  'if': 'if_',
  'ig': 'ig',
  'io': 'io',
  'hi': 'hi',
  'hf': 'hf',
  'hg': 'hg',
  'ho': 'ho',
}
params = {}
for linen_name, nnx_name in gates.items():
  sub = getattr(cell, nnx_name)
  params[linen_name] = {'kernel': sub.kernel[...]}
  if sub.bias is not None:
    params[linen_name]['bias'] = sub.bias[...]
carry = cell.initialize_carry(
  (2, 3), rngs=nnx.Rngs(1), carry_init=nnx.initializers.normal(1.0)
)
(nc, nh), ny = cell(carry, x)
for cls in (nn.LSTMCell, nn.OptimizedLSTMCell):
  (lc, lh), ly = cls(4).apply({'params': params}, carry, x)
  report.array(f'{cls.__name__}-c', lc - nc, atol=1e-6)
  report.array(f'{cls.__name__}-y', ly - ny, atol=1e-6)
report.array('nnx-y', ny)
lv = nn.LSTMCell(4).init(jax.random.key(0), carry, x)
report.tree('linen-lstm-params', lv)
