"""nnx.tabulate: Variables with metadata of their own are shown with it,
None / empty inputs and bools are shown, a None output leaves the cell
empty."""

import jax.numpy as jnp
import report
from flax import nnx

wide = {'width': 200, 'force_terminal': False}


class Meta(nnx.Module):
  def __init__(self, rngs):
    self.l = nnx.Linear(2, 2, rngs=rngs)
    self.a = nnx.Param(jnp.ones(3), tag='hello', extra={'a': 1})
    self.b = nnx.Param(
      jnp.ones(2), out_sharding=('x', None), eager_sharding=False
    )
    self.c = nnx.Param(jnp.ones(2), hijax=False)
    self.d = nnx.BatchStat(jnp.ones(2), note=None)
    self.e = nnx.Param(jnp.ones(2), lst=[1, 2], meta={}, z=0, s='')
    self.f = nnx.Param(jnp.ones(2), t=(None, 1), f=1.5, bb=False, only=(None,))

  def __call__(self, x, mask=None, cfg={}, flag=True):
    return self.l(x)


x = jnp.ones((1, 2))
model = Meta(nnx.Rngs(0))
report.text('metadata', nnx.tabulate(model, x, console_kwargs=wide))
report.text(
  'None and {} positional',
  nnx.tabulate(model, x, None, {}, console_kwargs=wide),
)
report.text(
  'None and {} keywords',
  nnx.tabulate(model, x, mask=None, cfg={}, console_kwargs=wide),
)
report.text(
  'bool keyword', nnx.tabulate(model, x, flag=False, console_kwargs=wide)
)


class ReturnsNone(nnx.Module):
  def __call__(self, x):
    return None


report.text('None output', nnx.tabulate(ReturnsNone(), x, console_kwargs=wide))
