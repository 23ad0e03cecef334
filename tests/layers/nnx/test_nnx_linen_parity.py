"""A Linen and an NNX model of the same architecture hold the same state."""

import jax
import jax.numpy as jnp
import pytest
from flax import linen as nn
from flax import nnx
from flax import traverse_util

from nnx_layer_helpers import assert_close
from nnx_layer_helpers import flat_state
from nnx_layer_helpers import shapes


def _linen_shapes(variables):
  out = {}
  for col, tree in variables.items():
    for path, v in traverse_util.flatten_dict(dict(tree)).items():
      out['/'.join(path)] = (tuple(v.shape), str(v.dtype))
  return out


def _load(model, variables):
  """Copies Linen variables into the NNX model (same paths)."""
  flat = {}
  for tree in variables.values():
    for path, v in traverse_util.flatten_dict(dict(tree)).items():
      flat['/'.join(path)] = v
  state = nnx.state(model)
  pure = state.to_pure_dict()
  new = traverse_util.unflatten_dict(
    {
      tuple(k.split('/')): flat[k]
      for k in ('/'.join(map(str, p)) for p in traverse_util.flatten_dict(pure))
    }
  )
  state.replace_by_pure_dict(new)
  nnx.update(model, state)


CASES = [
  (
    'dense',
    lambda: nn.Dense(3),
    lambda r: nnx.Linear(4, 3, rngs=r),
    (2, 4),
  ),
  (
    'dense_general',
    lambda: nn.DenseGeneral((2, 3), axis=(-2, -1)),
    lambda r: nnx.LinearGeneral((4, 5), (2, 3), axis=(-2, -1), rngs=r),
    (2, 4, 5),
  ),
  (
    'conv',
    lambda: nn.Conv(5, (3, 3), strides=2),
    lambda r: nnx.Conv(4, 5, (3, 3), strides=2, rngs=r),
    (1, 6, 6, 4),
  ),
  (
    'conv_transpose',
    lambda: nn.ConvTranspose(5, (3, 3), strides=(2, 2)),
    lambda r: nnx.ConvTranspose(4, 5, (3, 3), strides=(2, 2), rngs=r),
    (1, 6, 6, 4),
  ),
  (
    'layer_norm',
    lambda: nn.LayerNorm(),
    lambda r: nnx.LayerNorm(4, rngs=r),
    (2, 4),
  ),
  (
    'rms_norm',
    lambda: nn.RMSNorm(),
    lambda r: nnx.RMSNorm(4, rngs=r),
    (2, 4),
  ),
  (
    'group_norm',
    lambda: nn.GroupNorm(num_groups=2),
    lambda r: nnx.GroupNorm(4, num_groups=2, rngs=r),
    (2, 3, 4),
  ),
  (
    'batch_norm',
    lambda: nn.BatchNorm(use_running_average=True),
    lambda r: nnx.BatchNorm(4, use_running_average=True, rngs=r),
    (2, 4),
  ),
  (
    'attention',
    lambda: nn.MultiHeadDotProductAttention(
      num_heads=2, qkv_features=8, out_features=5
    ),
    lambda r: nnx.MultiHeadAttention(
      2, 4, qkv_features=8, out_features=5, decode=False, rngs=r
    ),
    (2, 3, 4),
  ),
  (
    'einsum',
    lambda: nn.Einsum((4, 3), 'ab,bc->ac'),
    lambda r: nnx.Einsum('ab,bc->ac', (4, 3), (3,), rngs=r),
    (2, 4),
  ),
]


@pytest.mark.parametrize(
  'name,linen_fn,nnx_fn,shape', CASES, ids=[c[0] for c in CASES]
)
def test_same_state_and_outputs(name, linen_fn, nnx_fn, shape):
  x = jax.random.normal(jax.random.key(1), shape)
  linen_model = linen_fn()
  variables = linen_model.init(jax.random.key(0), x)
  model = nnx_fn(nnx.Rngs(0))
  assert shapes(model) == _linen_shapes(variables)
  _load(model, variables)
  for k, v in flat_state(model).items():
    assert v.shape == _linen_shapes(variables)[k][0]
  assert_close(model(x), linen_model.apply(variables, x), atol=1e-5)


def test_embed_parity():
  ids = jnp.array([[0, 3, 1]])
  linen_model = nn.Embed(5, 3)
  variables = linen_model.init(jax.random.key(0), ids)
  model = nnx.Embed(5, 3, rngs=nnx.Rngs(0))
  assert shapes(model) == _linen_shapes(variables)
  _load(model, variables)
  assert_close(model(ids), linen_model.apply(variables, ids), 0, 0)


def test_mlp_parity():
  class LinenMLP(nn.Module):
    @nn.compact
    def __call__(self, x):
      x = nn.Dense(8, name='linear1')(x)
      x = nn.relu(x)
      return nn.Dense(2, name='linear2')(x)

  class NNXMLP(nnx.Module):
    def __init__(self, rngs):
      self.linear1 = nnx.Linear(3, 8, rngs=rngs)
      self.linear2 = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
      return self.linear2(nnx.relu(self.linear1(x)))

  x = jnp.ones((4, 3))
  variables = LinenMLP().init(jax.random.key(0), x)
  model = NNXMLP(nnx.Rngs(0))
  assert shapes(model) == _linen_shapes(variables)
  _load(model, variables)
  assert_close(model(x), LinenMLP().apply(variables, x), 1e-6, 1e-6)
