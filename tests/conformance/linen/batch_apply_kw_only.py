"""nn.BatchApply and kw_only_dataclasses."""

import dataclasses
import inspect

import jax.numpy as jnp
import report
from flax import linen as nn
from flax.linen import kw_only_dataclasses as kd

x = jnp.arange(24.0).reshape(2, 3, 4)
report.array('sum', nn.BatchApply(lambda y: y.sum(-1))(x))
a, b = nn.BatchApply(lambda u, v: (u * v, u.mean(-1)))(x, x)
report.array('product', a)
report.array('mean', b)
report.array('kwargs', nn.BatchApply(lambda u, v: u + v, num_dims=1)(x, v=x))
with report.raises('no mergeable input'):
  nn.BatchApply(lambda u: u, num_dims=3)(jnp.ones((2, 3)))


@kd.dataclass
class A:
  a: int
  b: int = kd.field(kw_only=True, default=3)
  c: int = 2


@kd.dataclass
class B(A):
  d: int = 5
  _: kd.KW_ONLY
  e: int = 6


report.text('A signature', str(inspect.signature(A)))
report.text('B signature', str(inspect.signature(B)))
report.text('B repr', repr(B(1, 2, 3)))
report.value('fields', [f.name for f in dataclasses.fields(B)])
report.text('KW_ONLY', repr(kd.KW_ONLY))
