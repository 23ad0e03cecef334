"""State dicts through flax.serialization (the registry of flax.core)."""

import collections
import dataclasses

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from flax import serialization, struct
from flax.core import FrozenDict, freeze
from flax.core import state_dict as core_state_dict


def test_registry_is_the_one_of_flax_core():
  for name in (
    'to_state_dict',
    'from_state_dict',
    'register_serialization_state',
    'current_path',
  ):
    assert getattr(serialization, name) is getattr(core_state_dict, name)


def test_containers_become_string_keyed_dicts():
  tree = {'a': [1, (2, 3)], 5: FrozenDict({'x': np.ones(1)})}
  state = serialization.to_state_dict(tree)
  assert state['a'] == {'0': 1, '1': {'0': 2, '1': 3}}
  assert set(state['5']) == {'x'} and type(state['5']) is dict


def test_frozen_dict_roundtrip_through_bytes():
  params = freeze(
    {'params': {'kernel': jnp.ones((2, 3)), 'bias': jnp.zeros(3)}}
  )
  data = serialization.to_bytes(params)
  assert data.startswith(b'\x81\xa6params\x82')
  restored = serialization.from_bytes(params, data)
  assert isinstance(restored, FrozenDict)
  assert isinstance(restored['params']['kernel'], np.ndarray)
  np.testing.assert_array_equal(restored['params']['kernel'], np.ones((2, 3)))


@struct.dataclass
class State:
  step: int
  params: dict
  fn: object = struct.field(pytree_node=False, default=None)


def test_struct_dataclass_keeps_pytree_fields_only():
  s = State(step=3, params={'w': np.arange(2)}, fn=print)
  assert set(serialization.to_state_dict(s)) == {'step', 'params'}
  target = State(step=0, params={'w': np.zeros(2)}, fn=len)
  restored = serialization.from_bytes(target, serialization.to_bytes(s))
  assert restored.step == 3 and restored.fn is len
  np.testing.assert_array_equal(restored.params['w'], [0, 1])


OptState = collections.namedtuple('OptState', ['count', 'mu'])
Empty = collections.namedtuple('Empty', [])


def test_namedtuples_like_optax_states():
  tree = (Empty(), OptState(count=np.array(4), mu={'w': np.ones(2)}))
  raw = serialization.msgpack_restore(serialization.to_bytes(tree))
  assert raw['0'] == {}
  assert set(raw['1']) == {'count', 'mu'}
  restored = serialization.from_state_dict(
    (Empty(), OptState(count=np.array(0), mu={'w': np.zeros(2)})), raw
  )
  assert isinstance(restored, tuple) and isinstance(restored[1], OptState)
  assert int(restored[1].count) == 4


def test_partial_is_serializable():
  p = jax.tree_util.Partial(max, np.array(1), key=np.array(2))
  state = serialization.to_state_dict(p)
  assert set(state) == {'args', 'keywords'}
  restored = serialization.from_bytes(p, serialization.to_bytes(p))
  assert isinstance(restored, jax.tree_util.Partial)
  assert restored.func is max
  assert int(restored.keywords['key']) == 2


def test_prng_key_restores_into_key_target():
  key = jax.random.key(7)
  restored = serialization.from_bytes(
    {'rng': jax.random.key(0)}, serialization.to_bytes({'rng': key})
  )
  np.testing.assert_array_equal(
    jax.random.key_data(restored['rng']), jax.random.key_data(key)
  )


def test_missing_fields_give_errors_with_paths():
  target = {'a': {'b': np.zeros(2), 'c': np.zeros(1)}}
  data = serialization.to_bytes({'a': {'b': np.ones(2)}})
  with pytest.raises(ValueError, match=r"contains keys \{'c'\}.*path ./a"):
    serialization.from_bytes(target, data)
  with pytest.raises(ValueError, match='size of the list'):
    serialization.from_bytes([1, 2, 3], serialization.to_bytes([1, 2]))
  with pytest.raises(ValueError, match='Missing field params'):
    serialization.from_state_dict(State(0, {}), {'step': 1})


def test_extra_fields():
  # Extra keys of a dict state are ignored; unknown dataclass fields raise.
  restored = serialization.from_bytes(
    {'a': 0}, serialization.to_bytes({'a': 1, 'extra': 2})
  )
  assert restored == {'a': 1}
  with pytest.raises(ValueError, match='Unknown field'):
    serialization.from_state_dict(
      State(0, {}), {'step': 1, 'params': {}, 'batch_stats': 3}
    )


def test_custom_registration_and_duplicate_error():
  @dataclasses.dataclass
  class Box:
    value: object

  serialization.register_serialization_state(
    Box,
    lambda b: {'value': serialization.to_state_dict(b.value)},
    lambda b, s: Box(serialization.from_state_dict(b.value, s['value'])),
  )
  with pytest.raises(ValueError, match='already registered'):
    serialization.register_serialization_state(Box, None, None)
  data = serialization.to_bytes({'box': Box(np.arange(3))})
  restored = serialization.from_bytes({'box': Box(None)}, data)
  np.testing.assert_array_equal(restored['box'].value, np.arange(3))


def test_target_none_gives_raw_state():
  data = serialization.to_bytes([12, {'foo': 'str', 'bar': np.array((2, 3))}])
  raw = serialization.from_bytes(None, data)
  assert raw['0'] == 12 and raw['1']['foo'] == 'str'
