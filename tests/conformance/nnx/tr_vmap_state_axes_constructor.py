"""nnx.vmap with StateAxes in_axes on an input whose structure changes
inside (the vectorised constructor), and the randomness guide's vmap over
a model with StateAxes / nnx.prefix axes."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

axes = nnx.StateAxes({nnx.Param: 0, ...: None})


class Stack(nnx.Module):
  @nnx.vmap(in_axes=(axes, 0))
  def __init__(self, key):
    self.w = nnx.Param(jax.random.normal(key, (3,)))
    self.count = nnx.BatchStat(jnp.zeros(2))


keys = jax.random.split(jax.random.key(0), 4)
s = Stack(keys)
report.array('w', s.w[...])
report.array('count', s.count[...])


class Model(nnx.Module):
  def __init__(self, rngs):
    self.linear = nnx.Linear(20, 10, rngs=rngs)
    self.drop = nnx.Dropout(0.1, rngs=rngs)

  def __call__(self, x):
    return nnx.relu(self.drop(self.linear(x)))


model = Model(nnx.Rngs(params=0, dropout=1))
state_axes = nnx.StateAxes({'dropout': 0, ...: None})


@nnx.split_rngs(splits=5, only='dropout')
@nnx.vmap(in_axes=(state_axes, 0), out_axes=0)
def forward(model, x):
  return model(x)


x = jnp.ones((5, 1, 20))
report.array('forward 1', forward(model, x))
report.array('forward 2', forward(model, x))
report.array('dropout count', model.drop.rngs.count[...])

model2 = Model(nnx.Rngs(params=0, dropout=1))
ax = nnx.prefix(model2, {'dropout': 0, ...: None}, graph=True)
f = nnx.vmap(
  lambda m, x: m(x), in_axes=(ax, 0), graph=True, graph_updates=False
)
with nnx.split_rngs(model2, splits=5, only='dropout', graph=True):
  report.array('prefix forward', f(model2, x))
