"""nnx.tabulate of a CNN with BatchNorm; the model is unchanged."""

import jax.numpy as jnp
import report
from flax import nnx


class CNN(nnx.Module):
  def __init__(self, *, rngs):
    self.conv1 = nnx.Conv(1, 4, kernel_size=(3, 3), rngs=rngs)
    self.bn = nnx.BatchNorm(4, rngs=rngs)
    self.linear = nnx.Linear(4 * 8 * 8, 10, rngs=rngs)

  def __call__(self, x):
    x = nnx.relu(self.bn(self.conv1(x)))
    return self.linear(x.reshape(x.shape[0], -1))


model = CNN(rngs=nnx.Rngs(0))
table = nnx.tabulate(
  model, jnp.ones((2, 8, 8, 1)), console_kwargs={'width': 160}
)
report.text('table', table)
report.array('running mean after tabulate', model.bn.mean[...])
