"""NNX objects rendered by treescope (their ``__treescope_repr__``, what a
notebook shows): Modules with their Variable totals, Variables, State,
Rngs, nnx.List / nnx.Dict and an Optimizer."""

import jax.numpy as jnp
import optax
import report
import treescope
from flax import nnx


class Model(nnx.Module):
  def __init__(self, rngs):
    self.lin = nnx.Linear(2, 3, rngs=rngs)
    self.bn = nnx.BatchNorm(3, rngs=rngs)
    self.drop = nnx.Dropout(0.1, rngs=rngs)
    self.name = 'x'
    self.pair = nnx.data((1, jnp.ones(2)))
    self.tagged = nnx.Param(jnp.ones(2), tag=3)
    self.items = nnx.List([1, nnx.Param(jnp.zeros(1))])
    self.table = nnx.Dict(a=1)


model = Model(nnx.Rngs(0))
model.lin.kernel[...] = jnp.arange(6.0).reshape(2, 3)
report.text('model', treescope.render_to_text(model))
report.text('state', treescope.render_to_text(nnx.state(model)))
report.text('params', treescope.render_to_text(nnx.state(model, nnx.Param)))
report.text('variable', treescope.render_to_text(model.tagged))
report.text('scalar variable', treescope.render_to_text(nnx.Param(1.0)))
report.text('rngs', treescope.render_to_text(nnx.Rngs(0, dropout=1)))
report.text('empty state', treescope.render_to_text(nnx.State({})))
opt = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
report.text(
  'optimizer step', treescope.render_to_text(nnx.state(opt, nnx.OptState))
)
