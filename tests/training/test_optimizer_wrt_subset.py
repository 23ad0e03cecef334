"""``Optimizer.update`` with gradients of more Variables than ``wrt``
covers (e.g. every Param with ``wrt=nnx.LoRAParam``): only the matching
ones are used."""

import jax
import jax.numpy as jnp
import optax
import pytest
from flax import nnx


class LoRAish(nnx.Param):
  pass


class Model(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = LoRAish(jnp.ones(2))
    self.c = nnx.BatchStat(jnp.ones(1))


def test_extra_gradients_are_left_out():
  model = Model()
  optimizer = nnx.Optimizer(model, optax.sgd(0.5), wrt=LoRAish)
  grads = jax.tree.map(jnp.ones_like, nnx.state(model))
  updates = optimizer.update(model, grads)
  assert list(updates.keys()) == ['b']
  assert model.a[...].tolist() == [1.0, 1.0]
  assert model.b[...].tolist() == [0.5, 0.5]
  assert model.c[...].tolist() == [1.0]


def test_missing_gradients_are_a_structure_error():
  model = Model()
  optimizer = nnx.Optimizer(model, optax.sgd(0.5), wrt=nnx.Param)
  grads = nnx.state(jax.tree.map(jnp.ones_like, nnx.state(model)), LoRAish)
  with pytest.raises(ValueError, match='pytree structure error'):
    optimizer.update(model, grads)


def test_lora_model_with_diffstate_and_param_grads():
  class MLP(nnx.Module):
    def __init__(self, rngs):
      self.linear1 = nnx.Linear(3, 4, rngs=rngs)
      self.lora = nnx.LoRA(
        4, 2, 4, base_module=nnx.Linear(4, 4, rngs=rngs), rngs=rngs
      )
      self.linear2 = nnx.LoRALinear(4, 2, lora_rank=2, rngs=rngs)

    def __call__(self, x):
      return self.linear2(self.lora(self.linear1(x)))

  def loss_fn(model, x, y):
    return ((model(x) - y) ** 2).mean()

  x, y = jnp.ones((4, 3)), jnp.ones((4, 2))
  for diff in (nnx.LoRAParam, nnx.Param):
    model = MLP(nnx.Rngs(0))
    frozen = nnx.state(model, nnx.Not(nnx.LoRAParam))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.LoRAParam)
    grads = nnx.grad(loss_fn, argnums=nnx.DiffState(0, diff))(model, x, y)
    before = loss_fn(model, x, y)
    optimizer.update(model, grads)
    assert loss_fn(model, x, y) < before
    # only the LoRA parameters moved
    after = nnx.state(model, nnx.Not(nnx.LoRAParam))
    assert jax.tree.all(jax.tree.map(jnp.array_equal, frozen, after))
    mu_paths = [p for p, _ in nnx.to_flat_state(optimizer.opt_state[0].mu)]
    lora_paths = [
      p for p, _ in nnx.to_flat_state(nnx.state(model, nnx.LoRAParam))
    ]
    assert mu_paths == lora_paths
