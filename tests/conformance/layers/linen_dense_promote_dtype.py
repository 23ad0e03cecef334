"""nn.Dense and friends: the promote_dtype field (repr, custom function)."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax.linen import dtypes

report.text('dense-repr', repr(nn.Dense(3)))
report.text('embed-repr', repr(nn.Embed(4, 2)))


def to_bf16(*args, dtype=None, inexact=True):
  return dtypes.promote_dtype(*args, dtype=jnp.bfloat16, inexact=inexact)


x = jnp.linspace(-1, 1, 8).reshape(2, 4)
for name, layer, inp in (
  ('dense', nn.Dense(3, promote_dtype=to_bf16), x),
  ('dense-general', nn.DenseGeneral((2, 2), promote_dtype=to_bf16), x),
  ('conv', nn.Conv(2, (2,), promote_dtype=to_bf16), x[None]),
  ('einsum', nn.Einsum((4, 3), 'ab,bc->ac', promote_dtype=to_bf16), x),
):
  variables = layer.init(jax.random.key(0), inp)
  report.tree(f'{name}-params', variables)
  report.array(f'{name}-out', layer.apply(variables, inp), rtol=1e-2, atol=1e-2)
