"""``nnx.Optimizer.update`` inside ``jax.jit`` on a model of hijax
Variables: the update is visible outside the jitted function."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2), hijax=True)
    self.b = nnx.Param(jnp.zeros(2), hijax=True, tag='b')
    self.c = nnx.BatchStat(jnp.zeros(()), hijax=True)


@jax.jit
def train_step(model, optimizer):
  graphdef, params, rest = nnx.split(model, nnx.Param, ...)

  def loss_fn(params):
    m = nnx.merge(graphdef, params, rest)
    return (m.w[...] * 2 + m.b[...]).sum()

  grads = jax.grad(loss_fn)(nnx.with_vars(params, hijax=False))
  optimizer.update(model, grads)


def test_adam_step_updates_hijax_model():
  model = Model()
  optimizer = nnx.Optimizer(model, optax.adam(0.1), wrt=nnx.Param)
  train_step(model, optimizer)
  train_step(model, optimizer)
  np.testing.assert_allclose(model.w[...], [0.80000126] * 2, rtol=1e-6)
  np.testing.assert_allclose(model.b[...], [-0.19999868] * 2, rtol=1e-6)
  # the Optimizer's own Variables are plain: jax.jit does not write them back
  assert int(optimizer.step[...]) == 0
  np.testing.assert_array_equal(optimizer.opt_state[0].mu['w'][...], [0, 0])


def test_hijax_optimizer_keeps_its_state():
  model = Model()
  with nnx.var_defaults(hijax=True):
    optimizer = nnx.Optimizer(model, optax.adam(0.1), wrt=nnx.Param)
  assert type(optimizer.step).__name__ == 'HijaxVariable'
  train_step(model, optimizer)
  train_step(model, optimizer)
  np.testing.assert_allclose(model.w[...], [0.8000016] * 2, rtol=1e-6)
  np.testing.assert_allclose(model.b[...], [-0.19999832] * 2, rtol=1e-6)
  assert int(optimizer.step[...]) == 2
  np.testing.assert_allclose(
    optimizer.opt_state[0].mu['w'][...], [0.38] * 2, rtol=1e-6
  )


def test_gradients_as_variables_inside_jit():
  model = Model()
  optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
  # the model's own Variables as gradients (traced hijax Variables)
  jax.jit(lambda m, o: o.update(m, nnx.state(m, nnx.Param)))(model, optimizer)
  np.testing.assert_allclose(model.w[...], [0.9] * 2, rtol=1e-6)
  np.testing.assert_array_equal(model.b[...], [0.0, 0.0])

  @jax.jit
  def plain_grads(m, o):
    grads = nnx.State(
      {'w': nnx.Param(jnp.full(2, 2.0)), 'b': nnx.Param(jnp.ones(2), tag='b')}
    )
    o.update(m, grads)

  plain_grads(model, optimizer)
  np.testing.assert_allclose(model.w[...], [0.7] * 2, rtol=1e-6)
  np.testing.assert_allclose(model.b[...], [-0.1] * 2, rtol=1e-6)
  assert model.b.tag == 'b' and model.b.hijax
