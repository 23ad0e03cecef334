"""nnx.jit train step with nnx.value_and_grad updates the model in place."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
x = jnp.linspace(-1, 1, 12).reshape(4, 3)
y = jnp.ones((4, 2))


@nnx.jit
def step(model, x, y):
  def loss_fn(model):
    return jnp.mean((model(x) - y) ** 2)

  loss, grads = nnx.value_and_grad(loss_fn)(model)
  params = nnx.state(model, nnx.Param)
  nnx.update(model, jax.tree.map(lambda p, g: p - 0.1 * g, params, grads))
  return loss


losses = [step(model, x, y) for _ in range(5)]
report.array('losses', jnp.stack(losses))
report.tree('params', nnx.state(model))
grads = nnx.grad(lambda m: jnp.sum(m(x)))(model)
report.tree('grads', grads)
