"""nnx.EMA.apply_to: the returned model shares the EMA's Variables, so it
evaluates with the averages as ``ema.update`` moves them (Flax 0.12.8)."""

import optax
import pytest

import jax.numpy as jnp
from flax import nnx


class Net(nnx.Module):
  def __init__(self, rngs):
    self.lin = nnx.Linear(2, 3, rngs=rngs)
    self.bn = nnx.BatchNorm(3, rngs=rngs)
    self.count = nnx.Variable(jnp.array(0))
    self.tied = self.lin.kernel

  def __call__(self, x):
    return self.bn(self.lin(x))


def _loss(m, x, y):
  return jnp.mean((m(x) - y) ** 2)


def test_apply_to_follows_updates_under_jit():
  rngs = nnx.Rngs(0)
  model = nnx.Sequential(
    nnx.Linear(2, 8, rngs=rngs), nnx.Linear(8, 8, rngs=rngs)
  )
  x, y = rngs.normal((32, 2)), rngs.normal((32, 8))
  optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
  ema = nnx.EMA(model, decay=0.9)
  ema_model = ema.apply_to(model)
  before = float(_loss(ema_model, x, y))

  @nnx.jit
  def train_step(model, optimizer, ema, x, y):
    _, grads = nnx.value_and_grad(_loss)(model, x, y)
    optimizer.update(model, grads)
    ema.update(model)

  for _ in range(20):
    train_step(model, optimizer, ema, x, y)
  # Values of Flax 0.12.8.
  assert float(_loss(ema_model, x, y)) == pytest.approx(1.37018, abs=1e-5)
  assert float(_loss(model, x, y)) == pytest.approx(1.13991, abs=1e-5)
  assert float(_loss(ema_model, x, y)) != pytest.approx(before)
  kernel = ema_model.layers[0].kernel
  assert kernel is ema.params['layers'][0]['kernel']
  assert kernel is not model.layers[0].kernel


@pytest.mark.parametrize('graph', [None, True])
def test_apply_to_shares_variables(graph):
  model = Net(nnx.Rngs(0))
  ema = nnx.EMA(model, decay=0.9, only=nnx.Param, graph=graph)
  applied = ema.apply_to(model)
  assert type(applied) is Net and applied is not model
  assert applied.lin is not model.lin  # new graph nodes
  # Averaged Variables are the EMA's, the others the model's.
  assert applied.lin.kernel is ema.params['lin']['kernel']
  assert applied.bn.scale is ema.params['bn']['scale']
  assert applied.tied is applied.lin.kernel
  assert applied.bn.mean is model.bn.mean
  assert applied.count is model.count
  model.count[...] = 7
  assert int(applied.count[...]) == 7
  # Repeated apply_to gives the same Variables.
  assert ema.apply_to(model).lin.kernel is applied.lin.kernel
  # Training-mode batch statistics go to the model's BatchStat.
  applied(jnp.arange(8.0).reshape(4, 2))
  assert not jnp.allclose(model.bn.mean[...], 0.0)


def test_apply_to_eager_updates_and_state_updates():
  model = nnx.Linear(2, 2, use_bias=False, rngs=nnx.Rngs(0))
  ema = nnx.EMA(model, decay=0.5)
  applied = ema.apply_to(model)
  start = model.kernel[...]
  model.kernel[...] = start * 3.0
  ema.update(model)
  assert jnp.allclose(applied.kernel[...], start * 2.0)
  ema.update(nnx.state(model))
  assert jnp.allclose(applied.kernel[...], start * 2.5)
  assert jnp.allclose(model.kernel[...], start * 3.0)


def test_apply_to_from_state_and_other_model():
  source = nnx.Linear(2, 3, rngs=nnx.Rngs(1))
  ema = nnx.EMA(nnx.state(source), decay=0.5)
  other = nnx.Linear(2, 3, rngs=nnx.Rngs(2))
  applied = ema.apply_to(other)
  assert applied.kernel is ema.params['kernel']
  assert jnp.array_equal(applied.kernel[...], source.kernel[...])
  assert not jnp.array_equal(other.kernel[...], source.kernel[...])


def test_apply_to_under_jit_returns_the_ema_variables():
  model = Net(nnx.Rngs(0))
  ema = nnx.EMA(model, decay=0.9, only=nnx.Param)
  applied = nnx.jit(lambda e, m: e.apply_to(m))(ema, model)
  assert applied.lin.kernel is ema.params['lin']['kernel']
  assert applied.bn.mean is model.bn.mean


@pytest.mark.parametrize(
  'target',
  [
    lambda: nnx.Linear(2, 3, use_bias=False, rngs=nnx.Rngs(0)),
    lambda: nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0))),
  ],
)
def test_apply_to_other_structure_is_an_error(target):
  ema = nnx.EMA(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), decay=0.9)
  with pytest.raises(ValueError, match='Incorrect number of leaves'):
    ema.apply_to(target())


def test_tree_mode_duplicates_are_an_error():
  model = Net(nnx.Rngs(0))
  with pytest.raises(ValueError, match='Duplicate'):
    nnx.EMA(model, decay=0.9, only=nnx.Param, graph=False)
