"""Tests of flax.core.state_dict."""

import collections
import doctest
import threading

import numpy as np
import pytest

from flax.core import FrozenDict
from flax.core import state_dict as sd

Point = collections.namedtuple('Point', ['x', 'y'])


def test_doctests():
  assert doctest.testmod(sd).failed == 0


def test_to_state_dict_of_builtin_containers():
  target = {
    'params': {'w': np.ones(2)},
    'layers': [1, (2, 3)],
    'point': Point(4, 5),
    'frozen': FrozenDict({'a': 6}),
    'none': None,
    1: 'int key',
  }
  state = sd.to_state_dict(target)
  assert state['layers'] == {'0': 1, '1': {'0': 2, '1': 3}}
  assert state['point'] == {'x': 4, 'y': 5}
  assert type(state['frozen']) is dict and state['frozen'] == {'a': 6}
  assert state['none'] is None
  assert state['1'] == 'int key'
  assert state['params']['w'] is target['params']['w']


def test_leaves_are_their_own_state():
  array = np.arange(3)
  assert sd.to_state_dict(array) is array
  assert sd.to_state_dict(3.5) == 3.5
  assert sd.from_state_dict(array, 'anything') == 'anything'
  assert sd.from_state_dict(None, {'a': 1}) == {'a': 1}


def test_non_unique_dict_keys_are_an_error():
  with pytest.raises(ValueError, match='unique string representation'):
    sd.to_state_dict({1: 'a', '1': 'b'})


def test_roundtrip_restores_types():
  target = {
    'list': [0, 0],
    'tuple': (0, {'a': 0}),
    'point': Point(0, 0),
    'frozen': FrozenDict({'b': 0}),
    1: 0,
  }
  state = {
    'list': {'0': 1, '1': 2},
    'tuple': {'0': 3, '1': {'a': 4}},
    'point': {'x': 5, 'y': 6},
    'frozen': {'b': 7},
    '1': 8,
  }
  restored = sd.from_state_dict(target, state)
  assert restored == {
    'list': [1, 2],
    'tuple': (3, {'a': 4}),
    'point': Point(5, 6),
    'frozen': FrozenDict({'b': 7}),
    1: 8,
  }
  assert type(restored['tuple']) is tuple
  assert type(restored['point']) is Point
  assert type(restored['frozen']) is FrozenDict
  # The target itself is left unchanged.
  assert target['list'] == [0, 0]
  assert sd.to_state_dict(restored) == state


def test_list_accepts_a_sequence_state():
  assert sd.from_state_dict([0, 0], [1, 2]) == [1, 2]


def test_missing_dict_key_names_the_path():
  target = {'params': {'Dense_0': {'kernel': 0, 'bias': 0}}}
  state = {'params': {'Dense_0': {'kernel': 1}}}
  with pytest.raises(ValueError) as info:
    sd.from_state_dict(target, state)
  message = str(info.value)
  assert "{'bias'}" in message
  assert message.endswith('at path ./params/Dense_0')


def test_extra_state_keys_of_dicts_are_ignored_like_flax():
  restored = sd.from_state_dict({'a': 0}, {'a': 1, 'extra': 2})
  assert restored == {'a': 1}


def test_list_length_mismatch():
  with pytest.raises(ValueError, match='size of the list and the state dict'):
    sd.from_state_dict({'x': [0, 0]}, {'x': {'0': 1}})


def test_namedtuple_field_mismatch():
  with pytest.raises(ValueError, match='field names of the state dict'):
    sd.from_state_dict(Point(0, 0), {'x': 1})


def test_namedtuple_legacy_layout():
  legacy = {
    'name': 'Point',
    'fields': {'0': 'x', '1': 'y'},
    'values': {'0': 1, '1': 2},
  }
  assert sd.from_state_dict(Point(0, 0), legacy) == Point(1, 2)


def test_non_dict_state_for_dict_target():
  with pytest.raises(ValueError, match='Expected a state dict'):
    sd.from_state_dict({'a': 0}, 5)


def test_register_custom_type_and_current_path():
  class Box:
    def __init__(self, content):
      self.content = content

  paths = []

  def to_state(box):
    return {'content': sd.to_state_dict(box.content)}

  def from_state(box, state):
    paths.append(sd.current_path())
    return Box(sd.from_state_dict(box.content, state['content'], 'content'))

  sd.register_serialization_state(Box, to_state, from_state)
  try:
    assert sd.is_serializable(Box(1))
    assert sd.to_state_dict({'b': Box([1])}) == {'b': {'content': {'0': 1}}}
    restored = sd.from_state_dict({'b': Box([0])}, {'b': {'content': [7]}})
    assert restored['b'].content == [7]
    assert paths == ['./b']
    with pytest.raises(ValueError, match='already registered'):
      sd.register_serialization_state(Box, to_state, from_state)
    sd.register_serialization_state(
      Box, lambda b: {'c': 0}, from_state, override=True
    )
    assert sd.to_state_dict(Box(1)) == {'c': 0}
  finally:
    sd._REGISTRY.pop(Box, None)
  assert not sd.is_serializable(Box(1))
  assert sd.current_path() == ''


def test_handler_must_return_string_keys():
  class Bad:
    pass

  sd.register_serialization_state(Bad, lambda x: {1: 2}, lambda x, s: x)
  try:
    with pytest.raises(TypeError, match='string keys'):
      sd.to_state_dict(Bad())
  finally:
    sd._REGISTRY.pop(Bad, None)


def test_path_is_per_thread():
  seen = []

  class Probe:
    pass

  def from_state(x, state):
    seen.append(sd.current_path())
    return state

  sd.register_serialization_state(Probe, lambda x: {}, from_state)
  try:
    thread = threading.Thread(
      target=lambda: sd.from_state_dict({'p': Probe()}, {'p': {}})
    )
    thread.start()
    thread.join()
    assert seen == ['./p']
  finally:
    sd._REGISTRY.pop(Probe, None)


class PluginPoint:
  """A type whose handlers come from a (fake) plugin."""

  def __init__(self, v):
    self.v = v


def plugin_to_state(p):
  return {'v': p.v}


def plugin_from_state(p, state):
  return PluginPoint(state['v'])


class _FakeRegistry:
  def __init__(self, records):
    self.records = records
    self.calls = []

  def state_handler(self, name):
    self.calls.append(name)
    return self.records.get(name)


def test_plugin_state_handlers_are_found_lazily(monkeypatch):
  from flax import plugins

  record = plugins.StateHandler(
    f'{__name__}:PluginPoint',
    f'{__name__}:plugin_to_state',
    f'{__name__}:plugin_from_state',
  )
  reg = _FakeRegistry({record.type: record})
  monkeypatch.setattr(plugins, 'registry', lambda: reg)
  try:
    assert sd.to_state_dict(PluginPoint(3)) == {'v': 3}
    assert sd.from_state_dict(PluginPoint(0), {'v': 4}).v == 4
    assert PluginPoint in sd._REGISTRY
    assert reg.calls == [record.type]
  finally:
    sd._REGISTRY.pop(PluginPoint, None)


def test_plugin_registry_is_consulted_once_per_type(monkeypatch):
  from flax import plugins

  reg = _FakeRegistry({})
  monkeypatch.setattr(plugins, 'registry', lambda: reg)

  class Unknown:
    pass

  for _ in range(3):
    assert sd.to_state_dict(Unknown()).__class__ is Unknown
  assert reg.calls == [f'{__name__}:{Unknown.__qualname__}']
