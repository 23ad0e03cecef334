"""NNX Module: iter_graph paths of Modules and Variables, train/eval,
clone."""

import jax.numpy as jnp
import report
from flax import nnx


class MLP(nnx.Module):
  def __init__(self, rngs):
    self.layers = nnx.List(
      [nnx.Linear(3, 4, rngs=rngs), nnx.Linear(4, 2, rngs=rngs)]
    )
    self.dropout = nnx.Dropout(0.5, rngs=rngs)

  def __call__(self, x):
    x = self.dropout(nnx.relu(self.layers[0](x)))
    return self.layers[1](x)


model = MLP(nnx.Rngs(0))
# The Modules and Variables of the graph (plain attributes left out: their
# set is an implementation detail of each layer).
report.value(
  'iter-graph-paths',
  [
    '/'.join(map(str, p))
    for p, v in nnx.iter_graph(model)
    if isinstance(v, (nnx.Module, nnx.Variable))
  ],
)
model.eval()
report.value('deterministic', model.dropout.deterministic)
x = jnp.ones((2, 3))
report.array('eval-out', model(x))
clone = nnx.clone(model)
report.array('clone-out', clone(x))
report.tree('params', nnx.state(model, nnx.Param))
