"""nnx.Optimizer with Adam: parameters after five steps."""

import jax.numpy as jnp
import optax
import report
from flax import nnx

model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
x = jnp.linspace(-1, 1, 12).reshape(4, 3)
y = jnp.ones((4, 2))


@nnx.jit
def step(model, optimizer, x, y):
  loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
  optimizer.update(model, grads)
  return loss


losses = jnp.stack([step(model, optimizer, x, y) for _ in range(5)])
report.array('losses', losses)
report.tree('params', nnx.state(model, nnx.Param))
report.array('step', optimizer.step[...])
