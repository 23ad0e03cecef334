"""NNX layer constructor surface: LoRALinear's a_metadata / b_metadata /
lora_promote_dtype reach its LoRA adapter; Einsum takes an int bias
shape; per-parameter metadata kwargs land on the Variables."""

import jax.numpy as jnp
import report
from flax import nnx


def meta(v, key='tag'):
  return v.get_metadata().get(key)


m = nnx.LoRALinear(
  3,
  4,
  lora_rank=2,
  rngs=nnx.Rngs(0),
  a_metadata={'tag': 'a'},
  b_metadata={'tag': 'b'},
  kernel_metadata={'tag': 'k'},
)
report.value(
  'lora-linear-metadata',
  [meta(m.lora.lora_a), meta(m.lora.lora_b), meta(m.kernel), meta(m.bias)],
)
report.tree('lora-linear-state', nnx.state(m))


def to_half(xs, dtype=None):
  return tuple(jnp.asarray(x, jnp.float16) for x in xs)


m = nnx.LoRALinear(
  3, 4, lora_rank=2, rngs=nnx.Rngs(1), lora_promote_dtype=to_half
)
y = m(jnp.ones((2, 3)))
report.value(
  'lora-promote-dtype', [str(y.dtype), str(m.lora(jnp.ones((1, 3))).dtype)]
)
report.array('lora-promote-out', y, rtol=1e-3, atol=1e-3)

lora = nnx.LoRA(3, 2, 4, rngs=nnx.Rngs(0), a_metadata={'tag': 'x'})
report.value('lora-metadata', [meta(lora.lora_a), meta(lora.lora_b)])

e = nnx.Einsum('ab,bc->ac', (3, 4), 4, rngs=nnx.Rngs(0))
report.value('einsum-int-bias', list(e.bias.shape))
report.array('einsum-int-bias-out', e(jnp.ones((2, 3))))
e = nnx.Einsum('ab,bc->ac', [3, 4], [4], rngs=nnx.Rngs(0))
report.value('einsum-list-shapes', [list(e.kernel.shape), list(e.bias.shape)])
with report.raises('einsum-int-kernel'):
  nnx.Einsum('a,a->a', 4, 4, rngs=nnx.Rngs(0))

report.value(
  'conv-int-kernel',
  list(nnx.Conv(3, 4, kernel_size=3, rngs=nnx.Rngs(0)).kernel.shape),
)
report.value(
  'linear-general-list',
  list(nnx.LinearGeneral([3], [4, 2], rngs=nnx.Rngs(0)).kernel.shape),
)
