"""nnx.tabulate of a model holding Rngs and calling Dropout with them:
RngState column, Rngs in the inputs, repeated calls shown once."""

import jax.numpy as jnp
import report
from flax import nnx


class WithRngs(nnx.Module):
  def __init__(self, rngs):
    self.rngs = rngs
    self.drop = nnx.Dropout(0.5)
    self.layers = nnx.List([nnx.Linear(3, 3, rngs=rngs) for _ in range(2)])

  def __call__(self, x):
    for layer in self.layers:
      x = self.drop(layer(x), rngs=self.rngs)
    return x


model = WithRngs(nnx.Rngs(0, dropout=1))
report.text(
  'table',
  nnx.tabulate(model, jnp.ones((4, 3)), console_kwargs={'width': 120}),
)
report.array('dropout count after tabulate', model.rngs.dropout.count[...])
