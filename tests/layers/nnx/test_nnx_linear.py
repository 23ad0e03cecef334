"""Linear, LinearGeneral, Einsum and Embed."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nnx_layer_helpers import assert_close
from nnx_layer_helpers import param_key
from nnx_layer_helpers import shapes


@pytest.fixture
def no_eager_sharding():
  # Variables with sharding metadata are placed on creation (eager
  # sharding) and need a mesh; these tests only look at the metadata.
  with nnx.use_eager_sharding(False):
    yield


def test_linear_state_and_keys():
  layer = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
  assert shapes(layer) == {
    'bias': ((3,), 'float32'),
    'kernel': ((2, 3), 'float32'),
  }
  assert isinstance(layer.kernel, nnx.Param)
  assert isinstance(layer.bias, nnx.Param)
  # Keys: one rngs.params() per parameter, kernel first.
  init = jax.nn.initializers.lecun_normal()
  expected = init(param_key(0, 0), (2, 3), jnp.float32)
  assert_close(layer.kernel[...], expected, rtol=0, atol=0)
  np.testing.assert_array_equal(layer.bias[...], np.zeros(3))


def test_linear_draws_one_key_per_param():
  rngs = nnx.Rngs(0)
  nnx.Linear(2, 3, rngs=rngs)
  second = nnx.Linear(2, 3, rngs=rngs)
  init = jax.nn.initializers.lecun_normal()
  assert_close(
    second.kernel[...], init(param_key(0, 2), (2, 3), jnp.float32), 0, 0
  )
  rngs = nnx.Rngs(0)
  nnx.Linear(2, 3, use_bias=False, rngs=rngs)
  third = nnx.Linear(2, 3, rngs=rngs)
  assert_close(
    third.kernel[...], init(param_key(0, 1), (2, 3), jnp.float32), 0, 0
  )


def test_linear_numerics():
  layer = nnx.Linear(
    4, 5, bias_init=nnx.initializers.normal(1.0), rngs=nnx.Rngs(1)
  )
  x = jax.random.normal(jax.random.key(3), (2, 7, 4))
  y = layer(x)
  w = np.asarray(layer.kernel[...])
  b = np.asarray(layer.bias[...])
  assert y.shape == (2, 7, 5)
  assert_close(y, np.asarray(x) @ w + b)


def test_linear_no_bias():
  layer = nnx.Linear(3, 2, use_bias=False, rngs=nnx.Rngs(0))
  assert layer.bias is None
  assert set(shapes(layer)) == {'kernel'}
  x = jnp.ones((1, 3))
  assert_close(layer(x), np.ones((1, 3)) @ np.asarray(layer.kernel[...]))


def test_linear_dtypes():
  layer = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
  assert layer(jnp.ones((1, 3), jnp.bfloat16)).dtype == jnp.float32
  assert layer(jnp.ones((1, 3), jnp.int32)).dtype == jnp.float32
  half = nnx.Linear(3, 2, dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
  assert half.kernel[...].dtype == jnp.float32
  assert half(jnp.ones((1, 3))).dtype == jnp.bfloat16
  p16 = nnx.Linear(3, 2, param_dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
  assert shapes(p16)['kernel'] == ((3, 2), 'bfloat16')


def test_linear_requires_rngs():
  with pytest.raises(TypeError):
    nnx.Linear(2, 3)


@pytest.mark.usefixtures('no_eager_sharding')
def test_linear_custom_init_and_metadata():
  # Sharding metadata outside a mesh needs eager sharding turned off.
  with nnx.use_eager_sharding(False):
    layer = nnx.Linear(
      2,
      3,
      kernel_init=nnx.initializers.ones_init(),
      kernel_metadata={'sharding': ('a', 'b')},
      rngs=nnx.Rngs(0),
    )
  np.testing.assert_array_equal(layer.kernel[...], np.ones((2, 3)))
  # ``sharding`` is an older name of the ``out_sharding`` metadata entry
  assert layer.kernel.get_metadata('out_sharding') == ('a', 'b')
  assert not layer.kernel.has_metadata('sharding')


def test_linear_under_jit_and_grad():
  layer = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
  x = jnp.ones((4, 3))

  def loss(m):
    return jnp.sum(m(x) ** 2)

  grads = nnx.grad(loss)(layer)
  w = np.asarray(layer.kernel[...])
  b = np.asarray(layer.bias[...])
  y = np.ones((4, 3)) @ w + b
  assert_close(grads['kernel'][...], np.ones((4, 3)).T @ (2 * y))
  assert_close(grads['bias'][...], (2 * y).sum(0))
  assert_close(nnx.jit(lambda m, x: m(x))(layer, x), y)


def test_linear_general_shapes_and_numerics():
  layer = nnx.LinearGeneral(5, (3, 4), rngs=nnx.Rngs(0))
  assert shapes(layer) == {
    'bias': ((3, 4), 'float32'),
    'kernel': ((5, 3, 4), 'float32'),
  }
  x = jax.random.normal(jax.random.key(0), (2, 5))
  expected = jnp.einsum('bi,ijk->bjk', x, layer.kernel[...])
  assert_close(layer(x), np.asarray(expected) + np.asarray(layer.bias[...]))

  layer = nnx.LinearGeneral((4, 5), 3, axis=(-2, -1), rngs=nnx.Rngs(0))
  assert layer.kernel.shape == (4, 5, 3)
  x = jax.random.normal(jax.random.key(1), (2, 4, 5))
  assert_close(
    layer(x), jnp.einsum('bij,ijk->bk', x, layer.kernel[...]), atol=1e-4
  )


def test_linear_general_flat_kernel_init():
  # The initializer sees the flattened (fan_in, fan_out) shape.
  seen = []

  def init(key, shape, dtype):
    seen.append(shape)
    return jnp.zeros(shape, dtype)

  nnx.LinearGeneral(
    (4, 5),
    (2, 3),
    axis=(-2, -1),
    kernel_init=init,
    bias_init=init,
    rngs=nnx.Rngs(0),
  )
  assert seen == [(20, 6), (6,)]
  layer = nnx.LinearGeneral((4, 5), (2, 3), axis=(-2, -1), rngs=nnx.Rngs(0))
  flat = jax.nn.initializers.lecun_normal()(param_key(0, 0), (20, 6))
  assert_close(layer.kernel[...], flat.reshape(4, 5, 2, 3), 0, 0)


def test_linear_general_batch_axis():
  layer = nnx.LinearGeneral(5, 3, batch_axis={0: 2}, rngs=nnx.Rngs(0))
  assert layer.kernel.shape == (2, 5, 3)
  assert layer.bias.shape == (2, 3)
  x = jax.random.normal(jax.random.key(2), (2, 7, 5))
  y = layer(x)
  expected = jnp.einsum('bti,bio->bto', x, layer.kernel[...])
  expected = expected + layer.bias[...][:, None, :]
  assert_close(y, expected, atol=1e-4)


def test_linear_general_axis_mismatch():
  with pytest.raises(ValueError):
    nnx.LinearGeneral((2, 3), 4, axis=-1, rngs=nnx.Rngs(0))


def test_einsum():
  layer = nnx.Einsum('nta,hab->nthb', (8, 2, 4), (8, 4), rngs=nnx.Rngs(0))
  assert shapes(layer) == {
    'bias': ((8, 4), 'float32'),
    'kernel': ((8, 2, 4), 'float32'),
  }
  x = jax.random.normal(jax.random.key(0), (16, 11, 2))
  y = layer(x)
  assert y.shape == (16, 11, 8, 4)
  expected = np.einsum('nta,hab->nthb', x, layer.kernel[...])
  assert_close(y, expected + np.asarray(layer.bias[...]), atol=1e-4)
  # A different equation at call time.
  layer2 = nnx.Einsum('ab,bc->ac', (3, 2), rngs=nnx.Rngs(0))
  assert layer2.bias is None
  x = jnp.ones((4, 3))
  assert_close(layer2(x), x @ layer2.kernel[...])
  assert_close(layer2(x.T, 'ba,bc->ac'), x @ layer2.kernel[...])


def test_einsum_errors():
  with pytest.raises(ValueError, match='must be explicit'):
    nnx.Einsum('ab,bc', (2, 3), rngs=nnx.Rngs(0))
  with pytest.raises(ValueError, match='exactly two operands'):
    nnx.Einsum('ab,bc,cd->ad', (2, 3), rngs=nnx.Rngs(0))


def test_embed():
  layer = nnx.Embed(num_embeddings=5, features=3, rngs=nnx.Rngs(0))
  assert shapes(layer) == {'embedding': ((5, 3), 'float32')}
  init = jax.nn.initializers.variance_scaling(
    1.0, 'fan_in', 'normal', out_axis=0
  )
  assert_close(
    layer.embedding[...], init(param_key(0, 0), (5, 3), jnp.float32), 0, 0
  )
  ids = jnp.array([[0, 4], [2, 2]])
  y = layer(ids)
  assert y.shape == (2, 2, 3)
  assert_close(y, np.asarray(layer.embedding[...])[np.asarray(ids)])
  q = jnp.ones((2, 3))
  assert_close(layer.attend(q), q @ layer.embedding[...].T)
  with pytest.raises(ValueError, match='integer'):
    layer(jnp.ones((2,)))


def test_embed_dtype():
  layer = nnx.Embed(4, 2, dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
  assert layer(jnp.array([1])).dtype == jnp.bfloat16
  assert layer.embedding[...].dtype == jnp.float32


@pytest.mark.usefixtures('no_eager_sharding')
def test_initializers_with_metadata():
  init = nnx.with_metadata(
    nnx.initializers.lecun_normal(), sharding=('a', None, 'b')
  )
  with nnx.use_eager_sharding(False):
    layer = nnx.LinearGeneral(4, (2, 3), kernel_init=init, rngs=nnx.Rngs(0))
    dense = nnx.Linear(
      2,
      3,
      kernel_init=nnx.with_metadata(
        nnx.initializers.lecun_normal(), sharding=(None, 'model')
      ),
      rngs=nnx.Rngs(0),
    )
  assert layer.kernel.shape == (4, 2, 3)
  assert layer.kernel.get_metadata('out_sharding') == ('a', None, 'b')
  assert dense.kernel.get_metadata('out_sharding') == (None, 'model')


def test_tree_mode_pytree():
  layer = nnx.Linear(2, 3, use_bias=False, rngs=nnx.Rngs(0))
  zeros = jax.tree.map(jnp.zeros_like, layer)
  assert isinstance(zeros, nnx.Linear)
  np.testing.assert_array_equal(zeros.kernel[...], np.zeros((2, 3)))
  assert zeros.bias is None


def test_linear_traces_to_plain_primitives_and_matches_eager():
  # the layer calls jax.lax.dot_general itself: a jaxpr shows the
  # primitives, with no nested jit
  m = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
  x = jnp.arange(6.0).reshape(2, 3)
  jaxpr = jax.make_jaxpr(m)(x)
  assert [e.primitive.name for e in jaxpr.eqns] == [
    'dot_general',
    'reshape',
    'add',
  ]
  expected = x @ m.kernel[...] + m.bias[...][None]
  np.testing.assert_allclose(m(x), expected, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(m)(x), expected, rtol=1e-6)
  g = nnx.grad(lambda m: m(x).sum())(m)
  np.testing.assert_allclose(g['bias'][...], [2.0] * 4)
  np.testing.assert_allclose(
    g['kernel'][...], np.tile([[3.0], [5.0], [7.0]], 4)
  )
  # a precision given as a list (unhashable) still works
  assert nnx.Linear(3, 4, precision=['highest', 'highest'], rngs=nnx.Rngs(0))(
    x
  ).shape == (2, 4)
