"""Variables, sow, perturb, PRNG streams and the errors around them."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import core
from flax import errors
from flax import linen as nn


def test_variable_running_mean():
  class BiasAdderWithRunningMean(nn.Module):
    decay: float = 0.99

    @nn.compact
    def __call__(self, x):
      is_initialized = self.has_variable('batch_stats', 'mean')
      ra_mean = self.variable(
        'batch_stats', 'mean', lambda s: jnp.zeros(s), x.shape[1:]
      )
      bias = self.param(
        'bias', lambda rng, shape: jnp.zeros(shape), x.shape[1:]
      )
      if is_initialized:
        ra_mean.value = self.decay * ra_mean.value + (
          1.0 - self.decay
        ) * jnp.mean(x, axis=0)
      return x - ra_mean.value[None] + bias[None]

  m = BiasAdderWithRunningMean()
  x = jnp.ones((10, 5))
  v = m.init(jax.random.key(0), x)
  np.testing.assert_array_equal(v['batch_stats']['mean'], jnp.zeros(5))
  params, state = v['params'], {'batch_stats': v['batch_stats']}
  for expected in (0.01, 0.0199, 0.029701):
    _, state = m.apply({'params': params, **state}, x, mutable=['batch_stats'])
    np.testing.assert_allclose(
      state['batch_stats']['mean'], jnp.full(5, expected), rtol=1e-5
    )


def test_variable_init_fn_gets_no_rng():
  seen = []

  class M(nn.Module):
    @nn.compact
    def __call__(self):
      v = self.variable('stats', 'v', lambda *a: seen.append(a) or 1.0)
      return v.value

  M().init(jax.random.key(0))
  assert seen == [()]


def test_missing_variable_without_init_fn():
  class M(nn.Module):
    @nn.compact
    def __call__(self):
      return self.variable('stats', 'v').value

  with pytest.raises(errors.ScopeCollectionNotFound):
    M().init(jax.random.key(0))


def test_get_put_variable():
  class M(nn.Module):
    @nn.compact
    def __call__(self):
      assert self.get_variable('state', 'x', default=-1) == -1
      self.put_variable('state', 'x', 3)
      return self.get_variable('state', 'x')

  out, v = M().init_with_output(jax.random.key(0))
  assert out == 3 and v == {'state': {'x': 3}}


def test_sow_accumulates_tuples():
  class M(nn.Module):
    def __call__(self, x):
      self.sow('intermediates', 'h', x)
      self.sow('intermediates', 'h', 2 * x)
      return x

  _, state = M().apply({}, 1.0, mutable=['intermediates'])
  assert state['intermediates']['h'] == (1.0, 2.0)
  # Not mutable: no-op, returns False.
  assert M().apply({}, 1.0) == 1.0
  # init does not make 'intermediates' mutable.
  assert M().init(jax.random.key(0), 1.0) == {}


def test_sow_custom_reduce():
  class M(nn.Module):
    def __call__(self, x):
      for _ in range(3):
        stored = self.sow(
          'stats', 'sum', x, init_fn=lambda: 0, reduce_fn=lambda a, b: a + b
        )
      return stored

  stored, state = M().apply({}, 2.0, mutable='stats')
  assert stored is True and state['stats']['sum'] == 6.0


def test_perturb_gives_intermediate_gradients():
  class M(nn.Module):
    @nn.compact
    def __call__(self, x):
      w = self.param('w', jax.nn.initializers.ones, (2,))
      h = self.perturb('hidden', x * w)
      return jnp.sum(h**2)

  x = jnp.array([1.0, 2.0])
  v = M().init(jax.random.key(0), x)
  assert set(v) == {'params', 'perturbations'}
  np.testing.assert_array_equal(v['perturbations']['hidden'], jnp.zeros(2))

  def loss(perturbations):
    return M().apply({'params': v['params'], 'perturbations': perturbations}, x)

  grads = jax.grad(loss)(v['perturbations'])
  np.testing.assert_allclose(grads['hidden'], 2 * x)
  # Without the collection perturb is the identity.
  assert M().apply({'params': v['params']}, x) == 5.0


def test_make_rng_streams():
  class M(nn.Module):
    @nn.compact
    def __call__(self):
      assert self.has_rng('dropout') and not self.has_rng('other')
      return self.make_rng('dropout'), self.make_rng('dropout')

  a1, a2 = M().apply({}, rngs={'dropout': jax.random.key(0)})
  b1, _ = M().apply({}, rngs={'dropout': jax.random.key(0)})
  c1, _ = M().apply({}, rngs={'dropout': jax.random.key(1)})
  data = jax.random.key_data
  assert not np.array_equal(data(a1), data(a2))
  np.testing.assert_array_equal(data(a1), data(b1))
  assert not np.array_equal(data(a1), data(c1))


def test_missing_rng_stream():
  class Bar(nn.Module):
    @nn.compact
    def __call__(self):
      return self.make_rng('dropout')

  with pytest.raises(errors.InvalidRngError, match='dropout'):
    Bar().apply({})


def test_is_initializing():
  seen = []

  class M(nn.Module):
    @nn.compact
    def __call__(self):
      seen.append(self.is_initializing())

  v = M().init(jax.random.key(0))
  M().apply(v)
  assert seen == [True, False]


def test_is_mutable_collection():
  class M(nn.Module):
    @nn.compact
    def __call__(self):
      return (
        self.is_mutable_collection('params'),
        self.is_mutable_collection('intermediates'),
      )

  out, _ = M().init_with_output(jax.random.key(0))
  assert out == (True, False)
  assert M().apply({}) == (False, False)


def test_param_unbox_keeps_box_in_variables():
  class M(nn.Module):
    @nn.compact
    def __call__(self):
      init = nn.with_partitioning(jax.nn.initializers.ones, ('a',))
      value = self.param('w', init, (2,))
      assert not isinstance(value, nn.Partitioned)
      boxed = self.param('b', init, (2,), unbox=False)
      assert isinstance(boxed, nn.Partitioned)
      return value

  v = M().init(jax.random.key(0))
  assert isinstance(v['params']['w'], nn.Partitioned)
  assert nn.get_partition_spec(v)['params']['w'] == jax.sharding.PartitionSpec(
    'a'
  )
  np.testing.assert_array_equal(nn.unbox(v)['params']['w'], jnp.ones(2))


def test_param_errors():
  class Embed(nn.Module):
    @nn.compact
    def __call__(self):
      return self.param('embed', jax.nn.initializers.ones, (2, 3))

  with pytest.raises(errors.ScopeParamNotFoundError) as info:
    Embed().apply({'params': {'other': jnp.ones(1)}})
  assert 'Could not find parameter named "embed" in scope "/".' in str(
    info.value
  )
  with pytest.raises(errors.ScopeParamShapeError) as info:
    Embed().apply({'params': {'embed': jnp.ones((5, 3))}})
  assert '(2, 3)' in str(info.value) and '(5, 3)' in str(info.value)


def test_lazy_init():
  class M(nn.Module):
    @nn.compact
    def __call__(self, x):
      return x @ self.param('w', jax.nn.initializers.ones, (x.shape[-1], 2))

  x = jax.ShapeDtypeStruct((1, 3), jnp.float32)
  v = M().lazy_init(jax.random.key(0), x)
  np.testing.assert_array_equal(v['params']['w'], jnp.ones((3, 2)))

  class DataDependent(nn.Module):
    @nn.compact
    def __call__(self, x):
      return self.param('w', lambda k: jnp.sum(x))

  with pytest.raises(errors.LazyInitError):
    DataDependent().lazy_init(jax.random.key(0), x)


def test_unbound_variable_access():
  with pytest.raises(ValueError, match='unbound'):
    nn.Module().variables  # noqa: B018


def test_variables_property_of_submodule():
  class Inner(nn.Module):
    @nn.compact
    def __call__(self):
      self.param('w', jax.nn.initializers.zeros, (1,))
      return self.variables

  class Outer(nn.Module):
    @nn.compact
    def __call__(self):
      return Inner()()

  out, _ = Outer().init_with_output(jax.random.key(0))
  assert jax.tree_util.tree_map(jnp.shape, out) == {'params': {'w': (1,)}}


def test_variable_methods_are_module_methods():
  # Users (and tracebacks) see them as Module's own methods.
  assert nn.Module.param.__qualname__ == 'Module.param'
  assert nn.Module.sow.__qualname__ == 'Module.sow'

  class Scale(nn.Module):
    pass

  assert repr(Scale().variable).startswith('<bound method Module.variable ')


def test_variable_key_order_through_pop_and_unfreeze():
  # init keeps creation order; flax.core.pop of a plain dict (and unfreeze
  # of a FrozenDict) give sorted keys, as Flax 0.12.8.
  # Small stand-ins named as the layers (flax-layers is not installed here):
  # the automatic names are Dense_0 and BatchNorm_0.
  class Dense(nn.Module):
    @nn.compact
    def __call__(self, x):
      kernel = self.param('kernel', jax.nn.initializers.ones, (x.shape[-1], 3))
      return x @ kernel

  class BatchNorm(nn.Module):
    @nn.compact
    def __call__(self, x):
      scale = self.param('scale', jax.nn.initializers.ones, (x.shape[-1],))
      mean = self.variable('batch_stats', 'mean', jnp.zeros, (x.shape[-1],))
      mean.value = x.mean(axis=0)
      return x * scale[None, :]

  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      return BatchNorm()(Dense()(x))

  x = jnp.ones((2, 4))
  variables = Model().init(jax.random.key(0), x)
  assert list(variables) == ['params', 'batch_stats']
  assert list(variables['params']) == ['Dense_0', 'BatchNorm_0']
  rest, params = core.pop(variables, 'params')
  assert list(params) == ['BatchNorm_0', 'Dense_0']
  assert list(rest) == ['batch_stats']
  assert list(core.unfreeze(variables)['params']) == ['Dense_0', 'BatchNorm_0']
  frozen = core.freeze(variables)
  assert list(core.unfreeze(frozen['params'])) == ['BatchNorm_0', 'Dense_0']
  # A FrozenDict's mutable collections are unfrozen (sorted) by apply.
  _, updates = Model().apply(frozen, x, mutable=True)
  assert list(updates['params']) == ['BatchNorm_0', 'Dense_0']
  _, updates = Model().apply(variables, x, mutable=True)
  assert list(updates['params']) == ['Dense_0', 'BatchNorm_0']
