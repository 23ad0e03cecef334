"""nnx.jit: static args, donation, .lower/.trace/.eval_shape, retracing."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(4.0))
    self.n = nnx.BatchStat(jnp.array(0))


traces = []


@nnx.jit(static_argnames=('k',))
def f(m, x, k=1):
  traces.append(k)
  m.n[...] += 1
  return m.w[...] * x * k


m = M()
report.array('k1', f(m, 2.0))
report.array('k1-again', f(m, 3.0))
report.array('k3', f(m, 2.0, k=3))
report.value('traces', traces)
report.array('n', m.n[...])

g = nnx.jit(lambda m, x, k: m.w[...] * x + k, static_argnums=(2,))
report.array('static-num', g(m, jnp.ones(4), 5))

out = f.eval_shape(m, 2.0)
report.value('eval-shape', [list(out.shape), str(out.dtype)])
report.array('n-after-eval-shape', m.n[...])

lowered = f.lower(m, 2.0)
report.value('lowered-has-text', 'func' in lowered.as_text())
report.array('n-after-lower', m.n[...])

d = nnx.jit(lambda m, x: x * 2, donate_argnums=(1,))
report.array('donate', d(m, jnp.ones(3)))
d = nnx.jit(lambda m: m.w[...] + 1, donate_argnames=('m',))
report.array('donate-module', d(M()))
