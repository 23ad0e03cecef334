"""nn.jit traces once per Module configuration, input shapes and variables.

Each test counts traces with a Python side effect inside the jitted body
(it only runs while JAX traces) and checks the numbers against plain JAX.
"""

import hashlib

import jax
import jax.numpy as jnp
import numpy as np

from flax import linen as nn
from flax.core import state_dict


def fold(key, *items):
  """Flax's static key derivation, written out: SHA-1 of the items."""
  digest = hashlib.sha1()
  for item in items:
    if isinstance(item, str):
      digest.update(item.encode())
    else:
      digest.update(item.to_bytes((item.bit_length() + 7) // 8, 'big'))
  return jax.random.fold_in(key, int.from_bytes(digest.digest()[:4], 'big'))


class Lin(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    k = self.param('k', jax.nn.initializers.normal(), (x.shape[-1], 2))
    return x @ k[:, : self.features]


class Holder(nn.Module):
  """Holds another Module in a field."""

  inner: nn.Module
  scale: float = 2.0

  @nn.compact
  def __call__(self, x):
    TRACES.append('holder')
    return self.inner(x) * self.scale


TRACES = []


def setup_function():
  TRACES.clear()


def test_class_holding_submodule_traces_once():
  class Outer(nn.Module):
    scale: float = 2.0

    @nn.compact
    def __call__(self, x):
      # nn.jit inside a compact method runs on every call.
      return nn.jit(Holder)(Lin(2), self.scale)(x)

  x = jnp.arange(3.0).reshape(1, 3)
  v = Outer().init(jax.random.key(0), x)
  k = v['params']['Lin_0']['k']
  Outer().apply(v, x)
  traced = len(TRACES)
  for i in range(4):
    y = Outer().apply(v, x + i)
    np.testing.assert_allclose(y, 2.0 * ((x + i) @ k), rtol=1e-6)
  assert len(TRACES) == traced
  # New inputs of the same shape reuse it; a new shape or config traces.
  Outer().apply(v, jnp.ones((1, 3)))
  assert len(TRACES) == traced
  Outer().apply(v, jnp.ones((5, 3)))
  assert len(TRACES) == traced + 1
  y = Outer(3.0).apply(v, x)
  assert len(TRACES) == traced + 2
  np.testing.assert_allclose(y, 3.0 * (x @ k), rtol=1e-6)


def test_jitted_method_traces_once_and_keys_are_data():
  class Noisy(nn.Module):
    @nn.jit
    @nn.compact
    def __call__(self, x):
      TRACES.append('noisy')
      y = Lin(2)(x)
      return y, jax.random.uniform(self.make_rng('dropout'), y.shape)

  x = jnp.ones((1, 3))
  v = Noisy().init(
    {'params': jax.random.key(0), 'dropout': jax.random.key(1)}, x
  )
  traced = len(TRACES)
  for seed in range(4):
    key = jax.random.key(seed)
    y, noise = Noisy().apply(v, x, rngs={'dropout': key})
    # Entering the jit draws the root's key 1; the body counts on: key 2.
    expected = jax.random.uniform(fold(fold(key, 1), 2), (1, 2))
    np.testing.assert_array_equal(noise, expected)
    np.testing.assert_allclose(y, x @ v['params']['Lin_0']['k'], rtol=1e-6)
  assert len(TRACES) == traced + 1  # apply traced once (init had its own)


def test_same_jitted_module_called_repeatedly():
  class Drop(nn.Module):
    @nn.compact
    def __call__(self, x):
      TRACES.append('drop')
      return x * jax.random.uniform(self.make_rng('dropout'))

  class Loop(nn.Module):
    @nn.compact
    def __call__(self, x):
      block = nn.jit(Drop)()
      return [block(x) for _ in range(5)]

  x = jnp.ones(())
  first = Loop().apply({}, x, rngs={'dropout': jax.random.key(3)})
  # The counters on entry are static: one trace per call position.
  assert len(TRACES) == 5
  values = [float(y) for y in first]
  assert len(set(values)) == 5  # every call draws its own key
  again = Loop().apply({}, x, rngs={'dropout': jax.random.key(3)})
  assert [float(y) for y in again] == values
  assert len(TRACES) == 5
  # Call i draws key 2i - 1 of scope 'JitDrop_0' and counts on inside.
  for i, y in enumerate(first, start=1):
    base = fold(jax.random.key(3), 'JitDrop_0', 2 * i - 1)
    np.testing.assert_array_equal(y, jax.random.uniform(fold(base, 2 * i)))


def test_cached_call_replays_counters_and_names():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      h = self.block(x)
      return Lin(2)(h), self.make_rng('dropout')

    @nn.jit
    def block(self, x):
      TRACES.append('block')
      noise = jax.random.uniform(self.make_rng('dropout'))
      return Lin(2)(x) + noise

  x = jnp.ones((1, 2))
  rngs = {'params': jax.random.key(0), 'dropout': jax.random.key(1)}
  v = Model().init(rngs, x)
  # The jitted block created Lin_0, so the outer layer is Lin_1.
  assert sorted(v['params']) == ['Lin_0', 'Lin_1']
  key = jax.random.key(7)
  outs = [Model().apply(v, x, rngs={'dropout': key}) for _ in range(3)]
  assert len(TRACES) == 2  # init and the first apply
  p = v['params']
  h = x @ p['Lin_0']['k'] + jax.random.uniform(fold(fold(key, 1), 2))
  for y, k in outs:
    np.testing.assert_allclose(y, h @ p['Lin_1']['k'], rtol=1e-6)
    # The jit drew key 1 and its body key 2, so the outer draw is key 3.
    np.testing.assert_array_equal(
      jax.random.key_data(k), jax.random.key_data(fold(key, 3))
    )


def test_jitted_method_with_module_argument():
  class Model(nn.Module):
    def setup(self):
      self.a = Lin(2)
      self.b = Lin(1)

    def __call__(self, x):
      return self.run(self.a, x), self.run(self.b, x)

    @nn.jit
    def run(self, layer, x):
      TRACES.append(layer.features)
      return layer(x) + 1.0

  x = jnp.ones((1, 3))
  v = Model().init(jax.random.key(0), x)
  TRACES.clear()
  for _ in range(3):
    ya, yb = Model().apply(v, x)
  assert sorted(TRACES) == [1, 2]
  p = v['params']
  np.testing.assert_allclose(ya, x @ p['a']['k'] + 1.0, rtol=1e-6)
  np.testing.assert_allclose(yb, x @ p['b']['k'][:, :1] + 1.0, rtol=1e-6)


def test_jit_transform_is_reused():
  assert nn.jit(Holder) is nn.jit(Holder)
  assert nn.jit(Holder) is not nn.jit(Holder, static_argnums=2)
  assert nn.jit(Holder).__name__ == 'JitHolder'


def test_jit_key_of_serializable_field_is_its_state():
  class Node:
    def __init__(self, a):
      self.a = a

    def __hash__(self):
      raise AssertionError('hashed')

    def __eq__(self, other):
      raise AssertionError('compared')

  state_dict.register_serialization_state(
    Node, lambda n: {'a': n.a}, lambda n, d: Node(d['a'])
  )
  traces = []

  class Foo(nn.Module):
    node: Node

    @nn.jit
    @nn.compact
    def __call__(self, x):
      traces.append(self.node.a)
      return x + self.node.a

  try:
    x = jnp.ones((2,))
    Foo(Node(1)).apply({}, x)
    Foo(Node(1)).apply({}, x)
    y = Foo(Node(2)).apply({}, x)
  finally:
    del state_dict._REGISTRY[Node]
  assert traces == [1, 2]
  assert y.tolist() == [3.0, 3.0]
