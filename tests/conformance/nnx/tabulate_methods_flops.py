"""nnx.tabulate: calls of other methods of submodules (path/method), RNG
stream calls filtered out, flops and vjp_flops columns."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class E(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((3, 4)))

  def __call__(self, x):
    return x @ self.w[...]

  def attend(self, x):
    return x @ self.w[...].T


class Top(nnx.Module):
  def __init__(self, rngs):
    self.e = E()
    self.rngs = rngs
    self.count = nnx.BatchStat(jnp.array(0))

  def __call__(self, x):
    self.count[...] += 1
    n = jax.random.normal(self.rngs.params(), x.shape)
    return self.e.attend(self.e(x + n))


wide = {'width': 200, 'force_terminal': False}
x = jnp.ones((2, 3))
top = Top(nnx.Rngs(0, params=1))
report.text('top', nnx.tabulate(top, x, console_kwargs=wide))
report.array('count after tabulate', top.count[...])
report.text(
  'flops',
  nnx.tabulate(
    E(), x, compute_flops=True, compute_vjp_flops=True, console_kwargs=wide
  ),
)
report.text(
  'vjp flops only',
  nnx.tabulate(E(), x, compute_vjp_flops=True, console_kwargs=wide),
)
report.text(
  'linear with styles',
  nnx.tabulate(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), jnp.ones((1, 2))),
)
