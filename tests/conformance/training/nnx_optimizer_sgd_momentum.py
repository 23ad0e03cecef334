"""nnx.Optimizer with SGD and momentum: five steps."""

import jax.numpy as jnp
import optax
import report
from flax import nnx


class Dense(nnx.Module):
  def __init__(self, din, dout):
    w = jnp.arange(din * dout, dtype=jnp.float32).reshape(din, dout)
    self.w = nnx.Param(w / 10 - 0.3)
    self.b = nnx.Param(jnp.zeros((dout,)))
    self.s = nnx.BatchStat(jnp.ones((dout,)))

  def __call__(self, x):
    return x @ self.w[...] + self.b[...][None, :] * self.s[...][None, :]


X = jnp.linspace(-1, 1, 12).reshape(4, 3)
Y = jnp.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])


def train(tx, wrt, steps=5):
  model = Dense(3, 2)
  optimizer = nnx.Optimizer(model, tx, wrt=wrt)

  @nnx.jit
  def step(model, optimizer):
    loss_fn = lambda m: jnp.mean((m(X) - Y) ** 2)  # noqa: E731
    diff = nnx.DiffState(0, wrt)
    loss, grads = nnx.value_and_grad(loss_fn, argnums=diff)(model)
    optimizer.update(model, grads)
    return loss

  losses = jnp.stack([step(model, optimizer) for _ in range(steps)])
  return model, optimizer, losses


model, optimizer, losses = train(optax.sgd(0.1, momentum=0.9), nnx.Param)
report.array('losses', losses)
report.tree('params', nnx.state(model, nnx.Param))
report.tree('trace', nnx.state(optimizer.opt_state))
