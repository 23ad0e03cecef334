"""nnx.Optimizer, nnx.ModelAndOptimizer and nnx.metrics."""

import numpy as np
import optax
import pytest

import jax
import jax.numpy as jnp
from flax import nnx, serialization


class Model(nnx.Module):
  def __init__(self, rngs):
    self.linear = nnx.Linear(3, 2, rngs=rngs)
    self.count = nnx.BatchStat(jnp.array(0.0))

  def __call__(self, x):
    return self.linear(x)


def loss_fn(model, x, y):
  return jnp.mean((model(x) - y) ** 2)


def test_optimizer_matches_plain_optax():
  model = Model(nnx.Rngs(0))
  tx = optax.adam(0.1)
  optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
  x, y = jnp.ones((4, 3)), jnp.zeros((4, 2))
  params = {
    'kernel': jnp.array(model.linear.kernel[...]),
    'bias': jnp.array(model.linear.bias[...]),
  }
  opt_state = tx.init(params)

  def plain_loss(p):
    return jnp.mean((x @ p['kernel'] + p['bias'][None, :] - y) ** 2)

  @nnx.jit
  def train_step(model, optimizer):
    grads = nnx.grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)

  for _ in range(3):
    train_step(model, optimizer)
    grads = jax.grad(plain_loss)(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
  np.testing.assert_allclose(
    model.linear.kernel[...], params['kernel'], rtol=1e-5
  )
  np.testing.assert_allclose(model.linear.bias[...], params['bias'], rtol=1e-5)
  assert int(optimizer.step[...]) == 3
  assert optimizer.step[...].dtype == jnp.uint32
  assert isinstance(optimizer.step, nnx.OptState)
  leaves = jax.tree.leaves(
    optimizer.opt_state, is_leaf=lambda v: isinstance(v, nnx.Variable)
  )
  # Adam's count is an array; its moments mirror the parameters.
  assert [type(v).__name__ for v in leaves] == [
    'OptArray',
    *['OptVariable'] * 4,
  ]
  # BatchStat is not a Param: untouched.
  assert float(model.count[...]) == 0.0


def test_optimizer_requires_wrt():
  with pytest.raises(TypeError, match='wrt'):
    nnx.Optimizer(Model(nnx.Rngs(0)), optax.sgd(0.1))


def test_wrt_filter_selects_variables():
  model = Model(nnx.Rngs(0))
  optimizer = nnx.Optimizer(model, optax.sgd(1.0), wrt=nnx.BatchStat)
  grads = nnx.state(model, nnx.BatchStat)
  grads = jax.tree.map(lambda v: jnp.ones_like(v), grads)
  kernel = model.linear.kernel[...]
  optimizer.update(model, grads)
  assert float(model.count[...]) == -1.0
  np.testing.assert_array_equal(model.linear.kernel[...], kernel)


def test_model_and_optimizer():
  model = Model(nnx.Rngs(1))
  optimizer = nnx.ModelAndOptimizer(model, optax.sgd(0.5))
  assert optimizer.model is model
  before = model.linear.bias[...]
  grads = nnx.grad(loss_fn)(model, jnp.ones((2, 3)), jnp.ones((2, 2)))
  optimizer.update(grads)
  np.testing.assert_allclose(
    model.linear.bias[...],
    before - 0.5 * grads['linear']['bias'][...],
    rtol=1e-6,
  )


def test_optimizer_state_serializes():
  model = Model(nnx.Rngs(0))
  optimizer = nnx.Optimizer(model, optax.adam(0.1), wrt=nnx.Param)
  state = nnx.state(optimizer)
  data = serialization.to_bytes(state)
  restored = serialization.from_bytes(state, data)
  for a, b in zip(jax.tree.leaves(restored), jax.tree.leaves(state)):
    np.testing.assert_array_equal(a, b)


def test_average_and_accuracy():
  avg = nnx.metrics.Average('loss')
  avg.update(loss=jnp.array([1.0, 2.0, 3.0]))
  avg.update(loss=6.0)
  assert float(avg.compute()) == pytest.approx(3.0)
  with pytest.raises(TypeError, match="'loss'"):
    avg.update(values=1.0)
  avg.reset()
  assert int(avg.count[...]) == 0

  acc = nnx.metrics.Accuracy()
  logits = jnp.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
  acc.update(logits=logits, labels=jnp.array([1, 1, 1]))
  assert float(acc.compute()) == pytest.approx(2 / 3)
  with pytest.raises(ValueError, match='logits.ndim==labels.ndim\\+1'):
    acc.update(logits=logits, labels=jnp.array([[1]]))
  binary = nnx.metrics.Accuracy(threshold=0.5)
  binary.update(logits=jnp.array([0.2, 0.7, 0.9]), labels=jnp.array([0, 1, 0]))
  assert float(binary.compute()) == pytest.approx(2 / 3)
  with pytest.raises(TypeError, match='float'):
    nnx.metrics.Accuracy(threshold=1)


def test_welford_matches_numpy():
  rng = np.random.default_rng(0)
  batches = [rng.normal(size=n).astype(np.float32) for n in (5, 1, 7)]
  w = nnx.metrics.Welford()
  for b in batches:
    w.update(values=jnp.asarray(b))
  stats = w.compute()
  allv = np.concatenate(batches)
  np.testing.assert_allclose(stats.mean, allv.mean(), rtol=1e-5)
  np.testing.assert_allclose(stats.standard_deviation, allv.std(), rtol=1e-4)
  np.testing.assert_allclose(
    stats.standard_error_of_mean, allv.std() / np.sqrt(allv.size), rtol=1e-4
  )


def test_multi_metric_under_jit():
  metrics = nnx.MultiMetric(
    accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average('loss')
  )

  @nnx.jit
  def step(metrics, logits, labels, loss):
    metrics.update(logits=logits, labels=labels, loss=loss)

  step(metrics, jnp.array([[1.0, 0.0]]), jnp.array([0]), jnp.array(4.0))
  step(metrics, jnp.array([[1.0, 0.0]]), jnp.array([1]), jnp.array(2.0))
  result = metrics.compute()
  assert set(result) == {'accuracy', 'loss'}
  assert float(result['accuracy']) == 0.5 and float(result['loss']) == 3.0
  metrics.reset()
  assert int(metrics.loss.count[...]) == 0


def test_optimizer_repr_shows_transform_and_state_as_tuples():
  m = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
  text = repr(nnx.Optimizer(m, optax.sgd(0.1), wrt=nnx.Param))
  assert 'tx=(<function chain.<locals>.init_fn at ' in text
  assert 'opt_state=((), ()),' in text
