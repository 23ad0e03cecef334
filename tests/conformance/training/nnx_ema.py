"""nnx.EMA: averages after updates from a model and a State, apply_to,
the only= filter and an update under nnx.jit."""

import jax.numpy as jnp
import report
from flax import nnx

model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
ema = nnx.EMA(model, 0.9)
model.kernel[...] = model.kernel[...] + 1.0
ema.update(model)
report.tree('after model update', ema.params)
ema.update(nnx.state(model))
report.tree('after state update', ema.params)
other = nnx.Linear(2, 3, rngs=nnx.Rngs(1))
averaged = ema.apply_to(other)
report.value('apply_to copies', averaged is not other)
report.array('applied kernel', averaged.kernel[...])
report.array('other kernel unchanged', other.kernel[...])
report.value('attributes', [ema.graph, ema.decay, str(ema.filter)])


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.b = nnx.BatchStat(jnp.zeros(2))


m = M()
only = nnx.EMA(m, 0.5, only=nnx.BatchStat)
m.b[...] = jnp.ones(2)
only.update(m)
report.tree('only batch stats', only.params)
full = nnx.EMA(m, 0.5)
m.w[...] = jnp.zeros(2)
nnx.jit(lambda e, m: e.update(m))(full, m)
report.tree('jit update', full.params)
report.tree('ema state', nnx.state(full))
