"""LoRA, Sequential, PReLU, re-exported functions and alias modules."""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nnx_layer_helpers import assert_close
from nnx_layer_helpers import param_key
from nnx_layer_helpers import shapes


def test_lora():
  layer = nnx.LoRA(3, 2, 4, rngs=nnx.Rngs(0))
  assert shapes(layer) == {
    'lora_a': ((3, 2), 'float32'),
    'lora_b': ((2, 4), 'float32'),
  }
  assert isinstance(layer.lora_a, nnx.LoRAParam)
  assert issubclass(nnx.LoRAParam, nnx.Param)
  he = jax.nn.initializers.he_uniform()
  assert_close(layer.lora_a[...], he(param_key(0, 0), (3, 2)), 0, 0)
  np.testing.assert_array_equal(layer.lora_b[...], np.zeros((2, 4)))
  layer.lora_b[...] = jnp.ones((2, 4))
  x = jax.random.normal(jax.random.key(1), (5, 3))
  assert_close(layer(x), np.asarray(x) @ layer.lora_a[...] @ np.ones((2, 4)))


def test_lora_base_module():
  base = nnx.Linear(3, 4, rngs=nnx.Rngs(1))
  layer = nnx.LoRA(3, 2, 4, base_module=base, rngs=nnx.Rngs(0))
  x = jnp.ones((1, 3))
  assert_close(layer(x), base(x))
  assert 'base_module/kernel' in shapes(layer)


def test_lora_linear():
  layer = nnx.LoRALinear(3, 4, lora_rank=2, rngs=nnx.Rngs(0))
  assert shapes(layer) == {
    'bias': ((4,), 'float32'),
    'kernel': ((3, 4), 'float32'),
    'lora/lora_a': ((3, 2), 'float32'),
    'lora/lora_b': ((2, 4), 'float32'),
  }
  x = jax.random.normal(jax.random.key(1), (2, 3))
  layer.lora.lora_b[...] = jnp.ones((2, 4))
  expected = (
    np.asarray(x) @ np.asarray(layer.kernel[...])
    + np.asarray(layer.bias[...])
    + np.asarray(x) @ layer.lora.lora_a[...] @ np.ones((2, 4))
  )
  assert_close(layer(x), expected)
  # Only the LoRA params are differentiated with a LoRAParam filter.
  grads = nnx.grad(
    lambda m: m(x).sum(), argnums=nnx.DiffState(0, nnx.LoRAParam)
  )(layer)
  assert set(grads.to_pure_dict()) == {'lora'}


def test_sequential():
  rngs = nnx.Rngs(0)
  model = nnx.Sequential(
    nnx.Linear(2, 8, rngs=rngs), nnx.relu, nnx.Linear(8, 3, rngs=rngs)
  )
  s = shapes(model)
  assert s['layers/0/kernel'] == ((2, 8), 'float32')
  assert s['layers/2/kernel'] == ((8, 3), 'float32')
  x = jax.random.normal(jax.random.key(0), (4, 2))
  l0, l2 = model.layers[0], model.layers[2]
  assert_close(model(x), l2(jax.nn.relu(l0(x))))


def test_sequential_tuple_and_dict_outputs():
  model = nnx.Sequential(
    lambda x: (x, x + 1), lambda a, b: {'a': a, 'b': b}, lambda a, b: a * b
  )
  assert_close(model(jnp.array(2.0)), 6.0)
  assert nnx.Sequential()(1) == 1  # no layers: the identity
  assert nnx.Sequential()(1, 2) == (1, 2)
  assert nnx.Sequential()() is None
  with pytest.raises(TypeError, match='not callable'):
    nnx.Sequential(1)(2)


def test_sequential_passes_rngs():
  model = nnx.Sequential(nnx.Dropout(0.5), nnx.relu)
  y = model(jnp.ones(10), rngs=nnx.Rngs(0))
  assert set(np.unique(np.asarray(y)).tolist()) <= {0.0, 2.0}


def test_prelu():
  layer = nnx.PReLU(negative_slope_init=0.1)
  assert shapes(layer) == {'negative_slope': ((), 'float32')}
  assert_close(layer(jnp.array([-2.0, 3.0])), [-0.2, 3.0])


def test_functions_are_jax():
  assert nnx.relu is jax.nn.relu
  assert nnx.gelu is jax.nn.gelu
  assert nnx.tanh is jnp.tanh
  assert nnx.initializers.lecun_normal is jax.nn.initializers.lecun_normal
  assert nnx.initializers.zeros_init()(jax.random.key(0), (2,)).shape == (2,)
  x = jnp.arange(8.0).reshape(1, 4, 2)
  y = nnx.avg_pool(x, (2,), strides=(2,))
  assert_close(y, x.reshape(1, 2, 2, 2).mean(2))
  assert_close(nnx.max_pool(x, (2,), strides=(2,)), x[:, 1::2])


@pytest.mark.parametrize(
  'name',
  [
    'linear',
    'normalization',
    'attention',
    'recurrent',
    'lora',
    'stochastic',
    'activations',
    'initializers',
    'dtypes',
  ],
)
def test_nn_alias_modules(name):
  alias = importlib.import_module(f'flax.nnx.nn.{name}')
  real = importlib.import_module(f'flax.layers.nnx.{name}')
  for attr in getattr(real, '__all__', None) or [
    k for k in vars(real) if not k.startswith('_')
  ]:
    assert getattr(alias, attr) is getattr(real, attr)


def test_nn_linear_alias_has_conv_and_defaults():
  from flax.nnx.nn import linear

  assert linear.Conv is nnx.Conv
  assert linear.ConvTranspose is nnx.ConvTranspose
  assert linear.Linear is nnx.Linear
  assert linear.default_kernel_init(jax.random.key(0), (2, 2)).shape == (2, 2)
  from flax.nnx.nn.dtypes import promote_dtype

  a, b = promote_dtype((jnp.ones(2, jnp.int32), jnp.ones(2, jnp.bfloat16)))
  assert a.dtype == b.dtype == jnp.bfloat16
  (c,) = promote_dtype((jnp.ones(2, jnp.int32),), inexact=False)
  assert c.dtype == jnp.int32
  (d,) = promote_dtype((jnp.ones(2),), dtype=jnp.float16)
  assert d.dtype == jnp.float16


def test_nnx_nn_namespace():
  import flax.nnx

  assert flax.nnx.nn.linear.Linear is nnx.Linear
  assert flax.nnx.initializers.ones is jax.nn.initializers.ones
