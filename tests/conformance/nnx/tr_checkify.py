"""nnx.checkify on module functions: error values, in-place updates."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from jax.experimental import checkify


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.array([1.0, -2.0]))
    self.n = nnx.BatchStat(jnp.array(0))


def f(m, x):
  m.n[...] += 1
  checkify.check(jnp.all(x > 0), 'x must be positive, got {x}', x=x)
  return m.w[...] * x


for graph in (True, False):
  m = M()
  err, y = nnx.checkify(f, graph=graph)(m, jnp.array([1.0, 2.0]))
  report.value(f'ok-err-{graph}', err.get())
  report.array(f'ok-y-{graph}', y)
  report.array(f'ok-n-{graph}', m.n[...])
  err, y = nnx.checkify(f, graph=graph)(m, jnp.array([1.0, -2.0]))
  report.text(f'bad-err-{graph}', str(err.get()).split('(check failed')[0])
  with report.raises(f'throw-{graph}'):
    err.throw()

m = M()
err, y = nnx.checkify(
  lambda m: m.w[...] / 0.0 * jnp.nan, errors=checkify.float_checks
)(m)
report.value('nan-has-err', err.get() is not None)
err, y = nnx.jit(nnx.checkify(f))(m, jnp.array([3.0, 3.0]))
report.value('jit-ok', err.get())
report.array('jit-n', m.n[...])
report.text('err-type', type(err).__name__)
report.value('x', jax.device_count())
