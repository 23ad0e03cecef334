"""State: the nested mapping of Variables that ``nnx.split`` returns.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> s = nnx.State({'a': {'w': nnx.Param(jnp.ones(2))}})
>>> s.a.w.value.shape, s['a']['w'].value.shape
((2,), (2,))
"""

import operator
import typing as tp
from collections.abc import MutableMapping

import jax

from flax.nnx import filterlib
from flax.nnx.variablelib import Variable


def _is_submapping(x):
  return isinstance(x, (dict, State))


def _unflatten_paths(paths, leaves) -> dict:
  root: dict = {}
  for path, leaf in zip(paths, leaves):
    node = root
    for key in path[:-1]:
      child = node.get(key)
      if child is None:
        child = node[key] = {}
      node = child
    node[path[-1]] = leaf
  return root


def _flatten_mapping(mapping, prefix=()):
  for key, value in mapping.items():
    path = prefix + (key,)
    if isinstance(value, State):
      value = value._mapping
    if isinstance(value, dict) and value:
      yield from _flatten_mapping(value, path)
    elif isinstance(value, dict):
      continue
    else:
      yield path, value


class State(MutableMapping):
  """A nested mapping of Variables (or other leaves), and a JAX pytree.

  Nested levels are reached by item or attribute access; ``jax.tree.map``
  keeps the Variable wrappers.
  """

  __slots__ = ('_raw', '_flat')

  def __init__(self, mapping=None, /, *, _copy: bool = True):
    if mapping is None:
      mapping = {}
    elif isinstance(mapping, State):
      mapping = mapping._mapping
    if _copy:
      mapping = _to_nested_dict(mapping)
    object.__setattr__(self, '_raw', mapping)
    object.__setattr__(self, '_flat', None)

  @classmethod
  def _from_flat(cls, paths, leaves) -> 'State':
    state = object.__new__(cls)
    object.__setattr__(state, '_raw', None)
    object.__setattr__(state, '_flat', (paths, leaves))
    return state

  @property
  def _mapping(self) -> dict:
    raw = self._raw
    if raw is None:
      paths, leaves = self._flat
      raw = _unflatten_paths(paths, leaves)
      object.__setattr__(self, '_raw', raw)
      object.__setattr__(self, '_flat', None)
    return raw

  @property
  def raw_mapping(self) -> dict:
    return self._mapping

  def _flat_items(self):
    """``(paths, leaves)`` of the state, in stored order."""
    flat = self._flat
    if flat is not None:
      return flat
    paths, leaves = [], []
    for path, leaf in _flatten_mapping(self._mapping):
      paths.append(path)
      leaves.append(leaf)
    return paths, leaves

  # -- mapping protocol -------------------------------------------------------
  def __getitem__(self, key):
    value = self._mapping[key]
    if isinstance(value, dict):
      return State(value, _copy=False)
    return value

  def __setitem__(self, key, value):
    if isinstance(value, State):
      value = value._mapping
    self._mapping[key] = value

  def __delitem__(self, key):
    del self._mapping[key]

  def __iter__(self):
    return iter(self._mapping)

  def __len__(self):
    return len(self._mapping)

  def __contains__(self, key):
    return key in self._mapping

  def __getattr__(self, key):
    if key.startswith('__'):
      raise AttributeError(key)
    try:
      return self[key]
    except KeyError:
      raise AttributeError(
        f"'State' object has no attribute {key!r}; keys: {list(self._mapping)}"
      ) from None

  def __setattr__(self, key, value):
    self[key] = value

  def __delattr__(self, key):
    try:
      del self[key]
    except KeyError:
      raise AttributeError(key) from None

  def __eq__(self, other):
    if isinstance(other, State):
      return self._mapping == other._mapping
    if isinstance(other, dict):
      return self._mapping == other
    return NotImplemented

  __hash__ = None

  def __repr__(self):
    from flax.nnx import reprlib

    return f'State({reprlib.mapping_repr(self._mapping, 0)})'

  def _repr_pretty_(self, p, cycle):
    p.text(repr(self))

  # -- views ---------------------------------------------------------------------
  def flat_state(self) -> 'FlatState':
    """The state as a flat list of ``(path, leaf)`` pairs."""
    paths, leaves = self._flat_items()
    return FlatState(zip(paths, leaves), sort=False)

  @classmethod
  def from_flat_path(cls, flat_state, /) -> 'State':
    """Builds a State from ``(path, leaf)`` pairs (or a mapping of them)."""
    if isinstance(flat_state, tp.Mapping):
      flat_state = flat_state.items()
    flat = list(flat_state)
    return cls(
      _unflatten_paths([p for p, _ in flat], [v for _, v in flat]), _copy=False
    )

  def to_pure_dict(self, extract_fn=None) -> dict:
    """Nested dict with the Variable values instead of the Variables."""

    def convert(x):
      if isinstance(x, Variable):
        return extract_fn(x) if extract_fn else x.raw_value
      return x

    return _map_nested(self._mapping, convert)

  def replace_by_pure_dict(self, pure_dict, replace_fn=None) -> None:
    """Puts the values of a pure dict back into the Variables of the state."""

    def visit(mapping, pure, prefix):
      for key, value in pure.items():
        key_in = key
        if key not in mapping and isinstance(key, str) and key.isdigit():
          key_in = int(key)
        if key_in not in mapping:
          raise ValueError(
            f'key {prefix + (key,)} in the pure dict is not in the state'
          )
        current = mapping[key_in]
        if isinstance(current, dict):
          visit(current, value, prefix + (key,))
        elif isinstance(current, Variable):
          if replace_fn is not None:
            mapping[key_in] = replace_fn(current, value)
          else:
            current.set_value(value)
        else:
          mapping[key_in] = value

    visit(self._mapping, pure_dict, ())

  def split(self, first, /, *filters):
    """Splits the state into one state per filter (``...`` takes the rest)."""
    predicates = filterlib.filters_to_predicates((first, *filters))
    states = _split_flat(*self._flat_items(), predicates, 'State.split')
    return states[0] if len(states) == 1 else tuple(states)

  def filter(self, first, /, *filters):
    """Like :meth:`split`, but values matching no filter are dropped."""
    predicates = filterlib.filters_to_predicates((first, *filters))
    states = _split_flat(*self._flat_items(), predicates, None)
    return states[0] if len(states) == 1 else tuple(states)

  @staticmethod
  def merge(state, /, *states) -> 'State':
    """Merges several states into a new one (later ones win)."""
    return merge_state(state, *states)

  def __or__(self, other):
    if not other:
      return self
    return merge_state(self, other)

  def __sub__(self, other):
    if not other:
      return self
    other_paths = set(_flatten_mapping(_as_dict(other)))
    other_paths = {p for p, _ in other_paths}
    flat = [(p, v) for p, v in zip(*self._flat_items()) if p not in other_paths]
    return State.from_flat_path(flat)


def _as_dict(x):
  return x._mapping if isinstance(x, State) else x


def _map_nested(mapping, fn):
  out = {}
  for key, value in mapping.items():
    if isinstance(value, State):
      value = value._mapping
    out[key] = _map_nested(value, fn) if isinstance(value, dict) else fn(value)
  return out


def _to_nested_dict(mapping) -> dict:
  out = {}
  for key, value in mapping.items():
    if isinstance(value, State):
      value = value._mapping
    if isinstance(value, tp.Mapping) and not isinstance(value, Variable):
      out[key] = _to_nested_dict(value)
    else:
      out[key] = value
  return out


def _split_flat(paths, leaves, predicates, error_ctx):
  buckets = [([], []) for _ in predicates]
  for path, leaf in zip(paths, leaves):
    for i, pred in enumerate(predicates):
      if pred(path, leaf):
        buckets[i][0].append(path)
        buckets[i][1].append(leaf)
        break
    else:
      if error_ctx is not None:
        raise ValueError(
          f'Non-exhaustive filters in {error_ctx}: {path!r} ({leaf!r}) is '
          'matched by none of them; add `...` as the last filter to collect '
          'the rest.'
        )
  return [State._from_flat(p, v) for p, v in buckets]


def merge_state(state, /, *states) -> State:
  """Merges states; entries of later states replace earlier ones."""
  result: dict = {}

  def merge_into(target, source):
    for key, value in source.items():
      if isinstance(value, State):
        value = value._mapping
      if isinstance(value, dict):
        sub = target.get(key)
        if not isinstance(sub, dict):
          sub = target[key] = {}
        merge_into(sub, value)
      else:
        target[key] = value

  for s in (state, *states):
    merge_into(result, _as_dict(s))
  return State(result, _copy=False)


def split_state(state, first, /, *filters):
  return (
    State(state).split(first, *filters)
    if not isinstance(state, State)
    else state.split(first, *filters)
  )


def filter_state(state, first, /, *filters):
  return state.filter(first, *filters)


class FlatState(tp.Sequence):
  """A list of ``(path, leaf)`` pairs with ``paths`` / ``leaves`` views."""

  def __init__(self, items, /, *, sort: bool = True):
    items = list(items)
    if sort:
      items.sort(key=lambda kv: tuple(map(str, kv[0])))
    self._paths = tuple(p for p, _ in items)
    self._leaves = [v for _, v in items]

  @property
  def paths(self):
    return self._paths

  @property
  def leaves(self):
    return self._leaves

  def __getitem__(self, i):
    if isinstance(i, slice):
      return FlatState(zip(self._paths[i], self._leaves[i]), sort=False)
    return self._paths[i], self._leaves[i]

  def __len__(self):
    return len(self._paths)

  def __iter__(self):
    return iter(zip(self._paths, self._leaves))

  def __repr__(self):
    return f'FlatState({list(self)!r})'

  def to_nested_state(self) -> State:
    return State._from_flat(list(self._paths), list(self._leaves))

  def split(self, first, /, *filters):
    predicates = filterlib.filters_to_predicates((first, *filters))
    states = _split_flat(self._paths, self._leaves, predicates, 'split')
    out = [FlatState(zip(*s._flat), sort=False) for s in states]
    return out[0] if len(out) == 1 else tuple(out)

  def filter(self, first, /, *filters):
    predicates = filterlib.filters_to_predicates((first, *filters))
    states = _split_flat(self._paths, self._leaves, predicates, None)
    out = [FlatState(zip(*s._flat), sort=False) for s in states]
    return out[0] if len(out) == 1 else tuple(out)


# -- pytree registration ---------------------------------------------------------


def _sorted_keys(mapping) -> tuple:
  types = set(map(type, mapping))
  if len(types) == 1 and (str in types or int in types):
    return tuple(sorted(mapping))
  return tuple(sorted(mapping, key=_sort_key))


def _state_flatten_with_keys(state):
  mapping = state._mapping
  keys = _sorted_keys(mapping)
  return (
    tuple((jax.tree_util.DictKey(k), mapping[k]) for k in keys),
    keys,
  )


# Insertion-ordered key tuple -> (that tuple, sorted key tuple). A hit is
# used only when the keys are the very same objects (so equal-but-different
# keys, e.g. ``1`` and ``True``, never share an entry).
_SORTED: dict = {}


def _state_flatten(state):
  mapping = state._raw
  if mapping is None:
    mapping = state._mapping
  order = tuple(mapping)
  hit = _SORTED.get(order)
  if hit is not None and all(map(_is, hit[0], order)):
    keys = hit[1]
  else:
    keys = _sorted_keys(mapping)
    if len(_SORTED) >= 4096:
      _SORTED.clear()
    _SORTED[order] = (order, keys)
  return tuple(map(mapping.__getitem__, keys)), keys


def _state_unflatten(keys, children):
  state = _new(State)
  _set_raw(state, dict(zip(keys, children)))
  _set_flat(state, None)
  return state


_is = operator.is_
_new = object.__new__
_set_raw = State.__dict__['_raw'].__set__
_set_flat = State.__dict__['_flat'].__set__


def _sort_key(k):
  return (0, k, '') if isinstance(k, int) else (1, 0, str(k))


jax.tree_util.register_pytree_with_keys(
  State, _state_flatten_with_keys, _state_unflatten, _state_flatten
)
