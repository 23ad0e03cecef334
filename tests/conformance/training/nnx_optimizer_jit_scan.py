"""nnx.Optimizer under jax.jit over split state and inside nnx.scan."""

import jax
import jax.numpy as jnp
import optax
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((2, 2)))


model = M()
optimizer = nnx.Optimizer(model, optax.adam(0.1), wrt=nnx.Param)
graphdef, state = nnx.split((model, optimizer))


@jax.jit
def step(state):
  model, optimizer = nnx.merge(graphdef, state)
  grads = nnx.grad(lambda m: (m.w[...] ** 2).sum())(model)
  optimizer.update(model, grads)
  return nnx.state((model, optimizer))


for _ in range(3):
  state = step(state)
nnx.update((model, optimizer), state)
report.array('jax.jit w', model.w[...])
report.array('jax.jit step', optimizer.step[...])

model = M()
optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)


@nnx.scan(in_axes=(nnx.Carry, None), out_axes=(nnx.Carry, 0), length=4)
def loop(carry, _):
  model, optimizer = carry
  loss, grads = nnx.value_and_grad(lambda m: (m.w[...] ** 2).sum())(model)
  optimizer.update(model, grads)
  return (model, optimizer), loss


_, losses = loop((model, optimizer), None)
report.array('scan losses', losses)
report.array('scan w', model.w[...])
report.array('scan step', optimizer.step[...])
