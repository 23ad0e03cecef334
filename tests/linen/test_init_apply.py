"""init / apply / bind: variable trees, numerics, PRNG keys, mutability."""

import hashlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flax
from flax import errors
from flax import linen as nn
from flax.core.frozen_dict import FrozenDict


class Lin(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    k = self.param(
      'kernel', jax.nn.initializers.lecun_normal(), (x.shape[-1], self.features)
    )
    b = self.param('bias', jax.nn.initializers.normal(), (self.features,))
    return x @ k + jnp.broadcast_to(b, x.shape[:-1] + b.shape)


class MLP(nn.Module):
  @nn.compact
  def __call__(self, x):
    h = jnp.tanh(Lin(4)(x))
    return Lin(2)(h)


def _path_key(root, *suffix):
  digest = hashlib.sha1()
  for item in suffix:
    if isinstance(item, str):
      digest.update(item.encode('utf-8'))
    else:
      digest.update(item.to_bytes((item.bit_length() + 7) // 8, 'big'))
  value = int.from_bytes(digest.digest()[:4], 'big')
  return jax.random.fold_in(root, np.uint32(value))


def test_param_keys_follow_flax_derivation():
  root = jax.random.key(42)
  params = MLP().init(root, jnp.ones((1, 3)))['params']
  k0 = jax.nn.initializers.lecun_normal()(_path_key(root, 'Lin_0', 1), (3, 4))
  b0 = jax.nn.initializers.normal()(_path_key(root, 'Lin_0', 2), (4,))
  k1 = jax.nn.initializers.lecun_normal()(_path_key(root, 'Lin_1', 1), (4, 2))
  np.testing.assert_array_equal(params['Lin_0']['kernel'], k0)
  np.testing.assert_array_equal(params['Lin_0']['bias'], b0)
  np.testing.assert_array_equal(params['Lin_1']['kernel'], k1)


def test_bare_key_means_params_stream():
  key = jax.random.key(0)
  a = MLP().init(key, jnp.ones((1, 3)))
  b = MLP().init({'params': key}, jnp.ones((1, 3)))
  jax.tree_util.tree_map(np.testing.assert_array_equal, a, b)


def test_apply_matches_plain_jax():
  x = jnp.arange(6.0).reshape(2, 3)
  v = MLP().init(jax.random.key(1), x)
  p = v['params']
  h = jnp.tanh(x @ p['Lin_0']['kernel'] + p['Lin_0']['bias'][None])
  expected = h @ p['Lin_1']['kernel'] + p['Lin_1']['bias'][None]
  np.testing.assert_allclose(MLP().apply(v, x), expected, rtol=1e-6)


def test_init_is_apply_with_empty_variables():
  x = jnp.ones((1, 3))
  key = jax.random.key(3)
  a = MLP().init(key, x)
  _, b = MLP().apply({}, x, rngs={'params': key}, mutable=True)
  jax.tree_util.tree_map(np.testing.assert_array_equal, a, b)


def test_init_with_output():
  out, v = MLP().init_with_output(jax.random.key(0), jnp.ones((1, 3)))
  np.testing.assert_allclose(out, MLP().apply(v, jnp.ones((1, 3))))


def test_returns_plain_dicts_or_frozen_dicts():
  v = MLP().init(jax.random.key(0), jnp.ones((1, 3)))
  assert type(v) is dict
  flax.config.update('flax_return_frozendict', True)
  try:
    v = MLP().init(jax.random.key(0), jnp.ones((1, 3)))
    assert isinstance(v, FrozenDict)
    # FrozenDict variables are accepted by apply.
    assert MLP().apply(v, jnp.ones((1, 3))).shape == (1, 2)
  finally:
    flax.config.update('flax_return_frozendict', False)


class Counter(nn.Module):
  @nn.compact
  def __call__(self, x):
    count = self.variable('counter', 'count', jnp.zeros, ())
    count.value += 1
    return x + self.param('b', jax.nn.initializers.zeros, ())


def test_mutable_returns_only_mutable_collections():
  v = Counter().init(jax.random.key(0), 1.0)
  assert set(v) == {'params', 'counter'}
  assert v['counter']['count'] == 1.0
  out, updates = Counter().apply(v, 1.0, mutable=['counter'])
  assert set(updates) == {'counter'}
  assert updates['counter']['count'] == 2.0
  _, updates = Counter().apply(v, 1.0, mutable='counter')
  assert updates['counter']['count'] == 2.0


def test_immutable_apply_raises_on_write():
  v = Counter().init(jax.random.key(0), 1.0)
  with pytest.raises(errors.ModifyScopeVariableError):
    Counter().apply(v, 1.0)


def test_mutable_collection_never_written_is_absent():
  v = MLP().init(jax.random.key(0), jnp.ones((1, 3)))
  _, updates = MLP().apply(v, jnp.ones((1, 3)), mutable=['batch_stats'])
  assert dict(updates) == {}


def test_method_argument_forms():
  class AutoEncoder(nn.Module):
    def setup(self):
      self.encoder = Lin(2)
      self.decoder = Lin(3)

    def __call__(self, x):
      return self.decode(self.encode(x))

    def encode(self, x):
      return self.encoder(x)

    def decode(self, z):
      return self.decoder(z)

  m = AutoEncoder()
  x = jnp.ones((1, 3))
  v = m.init(jax.random.key(0), x)
  z = m.apply(v, x, method=AutoEncoder.encode)
  np.testing.assert_array_equal(z, m.apply(v, x, method='encode'))
  np.testing.assert_array_equal(z, m.apply(v, x, method=m.encode))
  np.testing.assert_array_equal(
    z, m.apply(v, x, method=lambda mdl, x: mdl.encoder(x))
  )
  # a name is looked up on the unbound module: setup attributes are not
  # there yet (as Flax 0.12.8)
  with pytest.raises(AttributeError, match="defined in '.setup\\(\\)'"):
    m.apply(v, x, method='encoder')
  with pytest.raises(errors.ApplyModuleInvalidMethodError):
    m.apply(v, x, method=3)


def test_init_with_method():
  class Two(nn.Module):
    def setup(self):
      self.a = Lin(2)

    def __call__(self, x):
      return self.a(x)

    def other(self, x):
      return 2 * self.a(x)

  v = Two().init(jax.random.key(0), jnp.ones((1, 3)), method='other')
  assert v['params']['a']['kernel'].shape == (3, 2)


def test_kwargs_forwarded():
  class M(nn.Module):
    @nn.compact
    def __call__(self, x, *, scale=1.0):
      return scale * Lin(1)(x)

  v = M().init(jax.random.key(0), jnp.ones((1, 2)), scale=2.0)
  a = M().apply(v, x=jnp.ones((1, 2)), scale=2.0)
  b = M().apply(v, jnp.ones((1, 2)))
  np.testing.assert_allclose(a, 2 * b)


def test_extra_variables_are_tolerated():
  v = MLP().init(jax.random.key(0), jnp.ones((1, 3)))
  v = {'params': {**v['params'], 'unused': {'w': jnp.ones(2)}}}
  assert MLP().apply(v, jnp.ones((1, 3))).shape == (1, 2)


def test_numpy_leaves_and_plain_dicts():
  v = {
    'params': {
      'kernel': np.ones((2, 1), np.float32),
      'bias': np.zeros((1,), np.float32),
    }
  }
  np.testing.assert_allclose(Lin(1).apply(v, jnp.ones((1, 2))), [[2.0]])


def test_bind_and_unbind():
  class Outer(nn.Module):
    def setup(self):
      self.encoder = Lin(2)

    def __call__(self, x):
      return self.encoder(x)

  x = jnp.ones((1, 3))
  v = Outer().init(jax.random.key(0), x)
  bound = Outer().bind(v)
  np.testing.assert_allclose(bound(x), Outer().apply(v, x))
  encoder, encoder_vars = bound.encoder.unbind()
  assert encoder.scope is None and encoder.name is None
  assert isinstance(encoder, Lin) and encoder.features == 2
  np.testing.assert_allclose(encoder.apply(encoder_vars, x), bound(x))
  with pytest.raises(errors.CallUnbindOnUnboundModuleError):
    Outer().unbind()


def test_nn_apply_and_init_functions():
  m = MLP()
  v = nn.init(lambda mdl, x: mdl(x), m)(jax.random.key(0), jnp.ones((1, 3)))
  out, v2 = nn.init_with_output(lambda mdl, x: mdl(x), m)(
    jax.random.key(0), jnp.ones((1, 3))
  )
  jax.tree_util.tree_map(np.testing.assert_array_equal, v, v2)
  y = nn.apply(lambda mdl, x: 2 * mdl(x), m)(v, jnp.ones((1, 3)))
  np.testing.assert_allclose(y, 2 * out)


def test_nn_apply_extracts_setup_submodule():
  class Outer(nn.Module):
    def setup(self):
      self.sub = Lin(2)

    def __call__(self, x):
      return self.sub(x)

  v = Outer().init(jax.random.key(0), jnp.ones((1, 3)))
  sub = nn.apply(lambda m: m.sub.clone(), Outer())(v)
  assert isinstance(sub, Lin) and sub.features == 2


def test_capture_intermediates():
  x = jnp.ones((1, 3))
  v = MLP().init(jax.random.key(0), x)
  y, state = MLP().apply(v, x, capture_intermediates=True)
  inter = state['intermediates']
  assert set(inter) == {'Lin_0', 'Lin_1', '__call__'}
  np.testing.assert_array_equal(inter['__call__'][0], y)
  assert inter['Lin_0']['__call__'][0].shape == (1, 4)

  def only_second(mdl, method_name):
    return mdl.name == 'Lin_1'

  _, state = MLP().apply(v, x, capture_intermediates=only_second)
  assert set(state['intermediates']) == {'Lin_1'}


def test_traceable_under_jax_transforms():
  x = jnp.ones((2, 3))
  key = jax.random.key(0)
  v = jax.jit(MLP().init)(key, x)
  ref = MLP().init(key, x)
  jax.tree_util.tree_map(np.testing.assert_allclose, v, ref)
  shapes = jax.eval_shape(MLP().init, key, x)
  assert shapes['params']['Lin_0']['kernel'].shape == (3, 4)

  def loss(params):
    return jnp.sum(MLP().apply({'params': params}, x) ** 2)

  grads = jax.jit(jax.grad(loss))(v['params'])
  p = v['params']

  def plain_loss(p):
    h = jnp.tanh(x @ p['Lin_0']['kernel'] + p['Lin_0']['bias'][None])
    return jnp.sum((h @ p['Lin_1']['kernel'] + p['Lin_1']['bias'][None]) ** 2)

  expected = jax.grad(plain_loss)(p)
  jax.tree_util.tree_map(
    lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5), grads, expected
  )
  keys = jax.random.split(key, 4)
  batched = jax.vmap(MLP().init, in_axes=(0, None))(keys, x)
  assert batched['params']['Lin_0']['kernel'].shape == (4, 3, 4)


def test_invalid_rngs():
  with pytest.raises(errors.InvalidRngError):
    MLP().init(3, jnp.ones((1, 3)))


def test_invalid_instance():
  v = MLP().init(jax.random.key(0), jnp.ones((1, 3)))
  with pytest.raises(errors.InvalidInstanceModuleError):
    MLP.apply(v, jnp.ones((1, 3)))
  with pytest.raises(errors.InvalidInstanceModuleError):
    MLP.init(jax.random.key(0), jnp.ones((1, 3)))
