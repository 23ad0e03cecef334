"""State: the nested mapping of Variables that ``nnx.split`` returns.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> s = nnx.State({'a': {'w': nnx.Param(jnp.ones(2))}})
>>> s.a.w.shape, s['a']['w'].shape
((2,), (2,))
"""

import operator
import typing as tp
from collections.abc import MutableMapping

import jax

from flax.nnx import filterlib, reprlib, visualization
from flax.nnx.variablelib import Variable
from flax.typing import Key as Key


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

  # ``_raw`` is the nested dict (built on first need); ``_flat`` caches its
  # ``(paths, leaves)`` on a root state, dropped by every change made through
  # the state or a sub-state of it (``_parent`` links a sub-state to the
  # state it came from).
  __slots__ = ('_raw', '_flat', '_parent')

  def __init__(self, mapping, /, *, _copy: bool = True):
    if isinstance(mapping, State):
      mapping = mapping._mapping
    elif not isinstance(mapping, tp.Mapping):
      mapping = dict(mapping)
      _copy = True
    if _copy:
      mapping = _to_nested_dict(mapping)
    object.__setattr__(self, '_raw', mapping)
    object.__setattr__(self, '_flat', None)
    object.__setattr__(self, '_parent', None)

  @classmethod
  def _from_flat(cls, paths, leaves) -> 'State':
    state = object.__new__(cls)
    object.__setattr__(state, '_raw', None)
    object.__setattr__(state, '_flat', (paths, leaves))
    object.__setattr__(state, '_parent', None)
    return state

  @property
  def _mapping(self) -> dict:
    raw = self._raw
    if raw is None:
      paths, leaves = self._flat
      raw = _unflatten_paths(paths, leaves)
      object.__setattr__(self, '_raw', raw)
    return raw

  @property
  def raw_mapping(self) -> dict:
    # The caller may change the dict: forget the cached flat view.
    mapping = self._mapping
    self._touch()
    return mapping

  def _touch(self) -> None:
    """Drops the cached flat view of this state and the states above it."""
    state = self
    while state is not None:
      if state._raw is None:  # the flat view is its only copy: build the dict
        state._mapping  # noqa: B018
      object.__setattr__(state, '_flat', None)
      state = state._parent

  def _flat_items(self):
    """``(paths, leaves)`` of the state, in stored order."""
    flat = self._flat
    if flat is not None:
      return flat
    paths, leaves = [], []
    for path, leaf in _flatten_mapping(self._mapping):
      paths.append(path)
      leaves.append(leaf)
    if self._parent is None:
      object.__setattr__(self, '_flat', (paths, leaves))
    return paths, leaves

  # -- mapping protocol -------------------------------------------------------
  def __getitem__(self, key):
    value = self._mapping[key]
    if isinstance(value, dict):
      sub = State(value, _copy=False)
      object.__setattr__(sub, '_parent', self)
      return sub
    return value

  def __setitem__(self, key, value):
    if isinstance(value, State):
      value = value._mapping
    mapping = self._mapping
    self._touch()
    mapping[key] = value

  def __delitem__(self, key):
    mapping = self._mapping
    self._touch()
    del mapping[key]

  def __iter__(self):
    return iter(self._mapping)

  def __len__(self):
    return len(self._mapping)

  def __contains__(self, key):
    return key in self._mapping

  def __reduce__(self):
    # pickled as its (nested) mapping; the flat view is not kept
    return (State, (self._mapping,))

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
    return self._repr_at_level(0)

  def _repr_at_level(self, level: int, short: bool = False) -> str:
    return f'State({reprlib.mapping_repr(self._mapping, level)})'

  def _repr_pretty_(self, p, cycle):
    p.text(repr(self))

  def __treescope_repr__(self, path, subtree_renderer):
    return visualization.render_state(self, path, subtree_renderer)

  # -- views ---------------------------------------------------------------------
  def flat_state(self) -> 'FlatState':
    """The state as a flat list of ``(path, leaf)`` pairs."""
    paths, leaves = self._flat_items()
    return FlatState.from_sorted_keys_values(paths, leaves)

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
    """Nested dict of plain values: the value of every Variable (or
    ``extract_fn(leaf)`` for every leaf when given).

    >>> from flax import nnx
    >>> nnx.State({'a': nnx.Param(1), 'b': {0: nnx.Param(2)}}).to_pure_dict()
    {'a': 1, 'b': {0: 2}}
    """
    return to_pure_dict(self, extract_fn)

  def replace_by_pure_dict(self, pure_dict, replace_fn=None) -> None:
    """Puts the values of a pure dict back into the leaves of the state.

    String keys made of digits match integer keys of the state (as
    checkpoints store them). ``replace_fn(leaf, value)`` returns the new
    leaf; by default a Variable gets ``value`` set in place.
    """
    replace_by_pure_dict(self, pure_dict, replace_fn)

  def map(self, f) -> 'State':
    """A new State with ``f(path, leaf)`` for every leaf.

    >>> from flax import nnx
    >>> nnx.State({'a': 1, 'b': {'c': 2}}).map(lambda path, x: (path, x))
    State({
      'a': (('a',), 1),
      'b': {
        'c': (('b', 'c'), 2)
      }
    })
    """
    paths, leaves = self._flat_items()
    return type(self)._from_flat(list(paths), list(map(f, paths, leaves)))

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


def node_state(paths: list, leaves: list):
  """The state of a graph node from its flat ``paths`` and ``leaves``: a
  State, or for a Variable root (one leaf at the empty path) the Variable
  itself, as :func:`~flax.nnx.split` gives it."""
  if len(paths) == 1 and paths[0] == ():
    return leaves[0]
  return State._from_flat(paths, leaves)


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
          'Non-exhaustive filters, got a non-empty remainder in '
          f'{error_ctx}: {path!r} ({leaf!r}) is matched by none of them; '
          'add `...` as the last filter to collect the rest.'
        )
  return [State._from_flat(p, v) for p, v in buckets]


def merge_state(state, /, *states, cls=State) -> State:
  """Merges states (or nested mappings); later entries replace earlier ones.

  >>> from flax import nnx
  >>> nnx.merge_state({'a': 1}, {'b': {'c': 2}}, {'a': 5})
  State({
    'a': 5,
    'b': {
      'c': 2
    }
  })
  """
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
  return cls(result, _copy=False)


def split_state(state, first, /, *filters):
  """Splits ``state`` into one State per filter (see :meth:`State.split`).

  >>> from flax import nnx
  >>> s = nnx.State({'w': nnx.Param(1), 'n': nnx.BatchStat(2)})
  >>> params, rest = nnx.split_state(s, nnx.Param, ...)
  >>> list(params), list(rest)
  (['w'], ['n'])
  """
  if not isinstance(state, State):
    state = State(state)
  return state.split(first, *filters)


def filter_state(state, first, /, *filters):
  """Keeps the leaves of ``state`` that match the filters (one State per
  filter; see :meth:`State.filter`)."""
  if not isinstance(state, State):
    state = State(state)
  return state.filter(first, *filters)


def map_state(f, state) -> State:
  """A new State with ``f(path, leaf)`` for every leaf of ``state``."""
  if not isinstance(state, State):
    state = State(state)
  return state.map(f)


def to_flat_state(state) -> 'FlatState':
  """The ``(path, leaf)`` pairs of ``state``, sorted by path."""
  if not isinstance(state, State):
    state = State(state)
  paths, leaves = state._flat_items()
  return FlatState(zip(paths, leaves), sort=True)


def from_flat_state(flat_state, *, cls=State) -> State:
  """Builds a State from ``(path, leaf)`` pairs or a ``{path: leaf}``
  mapping.

  >>> from flax import nnx
  >>> nnx.from_flat_state([(('a', 0), 1)])
  State({
    'a': {
      0: 1
    }
  })
  """
  if isinstance(flat_state, FlatState):
    paths, leaves = list(flat_state.paths), list(flat_state.leaves)
  else:
    items = (
      flat_state.items() if isinstance(flat_state, tp.Mapping) else flat_state
    )
    paths, leaves = [], []
    for path, leaf in items:
      paths.append(tuple(path))
      leaves.append(leaf)
  return cls(_unflatten_paths(paths, leaves), _copy=False)


def _default_extract(x):
  return x._raw_value if isinstance(x, Variable) else x


def to_pure_dict(state, extract_fn=None) -> dict:
  """Nested dict of plain values of ``state`` (Variables replaced by their
  values, or every leaf by ``extract_fn(leaf)``).

  >>> from flax import nnx
  >>> nnx.to_pure_dict(nnx.State({'w': nnx.Param(1), 'n': 2}))
  {'w': 1, 'n': 2}
  """
  mapping = state._mapping if isinstance(state, State) else state
  return _map_nested(mapping, extract_fn or _default_extract)


def _default_replace(leaf, value):
  if isinstance(leaf, Variable):
    # A new Variable of the same type and metadata: the Variables a State
    # shares with a Module (after ``nnx.split``) keep their values.
    return leaf.replace(value)
  return value


def replace_by_pure_dict(state, pure_dict, replace_fn=None) -> None:
  """Puts the values of ``pure_dict`` into ``state`` in place.

  Each Variable leaf is replaced by a new Variable of its type and metadata
  holding the new value (``replace_fn(leaf, value)`` when given), so the
  Module ``state`` was split from is unchanged until ``nnx.update``.

  Keys made of digits match integer keys of the state. A key of the pure
  dict that the state lacks is a ValueError naming its path.

  >>> from flax import nnx
  >>> s = nnx.State({'w': nnx.Param(1), 'l': {0: nnx.Param(2)}})
  >>> nnx.replace_by_pure_dict(s, {'w': 5, 'l': {'0': 7}})
  >>> nnx.to_pure_dict(s)
  {'w': 5, 'l': {0: 7}}
  """
  replace = replace_fn or _default_replace
  root = state.raw_mapping if isinstance(state, State) else state
  for path, value in _flatten_pure(pure_dict, ()):
    key_path = path
    parent = _leaf_parent(root, key_path)
    if parent is None:
      key_path = _int_path(path)
      parent = _leaf_parent(root, key_path)
    if parent is None:
      raise ValueError(f'key in pure_dict not available in state: {path}')
    parent[key_path[-1]] = replace(parent[key_path[-1]], value)


def _flatten_pure(pure, prefix):
  """``(path, value)`` of the leaves of a nested pure dict (empty mappings
  hold no leaves)."""
  for key, value in pure.items():
    if isinstance(value, tp.Mapping):
      yield from _flatten_pure(value, prefix + (key,))
    else:
      yield prefix + (key,), value


def _int_path(path):
  return tuple(
    int(k) if isinstance(k, str) and k.isdigit() else k for k in path
  )


def _leaf_parent(mapping, path):
  """The dict holding the state leaf at ``path``, or None when ``path``
  does not lead to a leaf."""
  for key in path:
    if isinstance(mapping, State):
      mapping = mapping._mapping
    if not isinstance(mapping, dict) or key not in mapping:
      return None
    parent, mapping = mapping, mapping[key]
  if isinstance(mapping, (dict, State)):
    return None
  return parent


def restore_int_paths(pure_dict: dict) -> dict:
  """Turns keys made of digits back into ints (checkpoint formats store
  every key as a string).

  >>> from flax import nnx
  >>> nnx.restore_int_paths({'layers': {'0': {'w': 1}}})
  {'layers': {0: {'w': 1}}}
  """

  def fix(key):
    return int(key) if isinstance(key, str) and key.isdigit() else key

  def visit(x):
    if isinstance(x, tp.Mapping):
      return {fix(k): visit(v) for k, v in x.items()}
    return x

  return visit(pure_dict)


def diff(state, other) -> State:
  """The entries of ``state`` whose path is not in ``other``."""
  if not other:
    return state
  other_paths = set(State(other)._flat_items()[0])
  paths, leaves = State(state)._flat_items()
  kept = [(p, v) for p, v in zip(paths, leaves) if p not in other_paths]
  return from_flat_state(kept)


def create_path_filters(state) -> dict:
  """``{PathIn(path): leaf}`` for every leaf of ``state``."""
  paths, leaves = State(state)._flat_items()
  return {filterlib.PathIn(p): v for p, v in zip(paths, leaves)}


class NestedStateRepr:
  """Shows a State as a nested mapping (without the ``State(...)``
  wrapper)."""

  def __init__(self, state):
    self.state = state

  def __repr__(self):
    return reprlib.mapping_repr(_as_dict(self.state), 0)


def _path_sort_key(path):
  return tuple(_sort_key(k) for k in path)


class FlatState(tp.Sequence):
  """A sequence of ``(path, leaf)`` pairs, with ``paths`` (a tuple) and
  ``leaves`` (a list) views.

  >>> from flax import nnx
  >>> fs = nnx.FlatState([(('b',), 1), (('a', 'x'), 2)], sort=True)
  >>> fs.paths, fs.leaves
  ((('a', 'x'), ('b',)), [2, 1])
  >>> fs[0], fs[1:].paths
  ((('a', 'x'), 2), (('b',),))
  """

  __slots__ = ('_paths', '_leaves')

  def __init__(self, items, /, *, sort: bool):
    items = list(items)
    if sort:
      items.sort(key=lambda kv: _path_sort_key(kv[0]))
    self._paths = tuple(p for p, _ in items)
    self._leaves = [v for _, v in items]

  @staticmethod
  def from_sorted_keys_values(keys, values, /) -> 'FlatState':
    """A FlatState from paths already in order and their leaves."""
    flat = object.__new__(FlatState)
    flat._paths = tuple(keys)
    flat._leaves = list(values)
    return flat

  @property
  def paths(self):
    return self._paths

  @property
  def leaves(self):
    return self._leaves

  def __getitem__(self, index):
    if isinstance(index, slice):
      return FlatState.from_sorted_keys_values(
        self._paths[index], self._leaves[index]
      )
    return self._paths[index], self._leaves[index]

  def __len__(self):
    return len(self._paths)

  def __iter__(self):
    return iter(zip(self._paths, self._leaves))

  def __eq__(self, other):
    if not isinstance(other, FlatState):
      return NotImplemented
    return self._paths == other._paths and self._leaves == other._leaves

  __hash__ = None

  def __repr__(self):
    if not self._paths:
      return 'FlatState([])'
    items = []
    for path, leaf in self:
      items.append(f'  ({path!r}, {reprlib.value_repr(leaf, 1).lstrip()})')
    return 'FlatState([\n' + ',\n'.join(items) + '\n])'

  def to_nested_state(self) -> State:
    return State._from_flat(list(self._paths), list(self._leaves))

  @staticmethod
  def merge(flat_state, /, *flat_states) -> 'FlatState':
    """Merges flat states into one sorted by path; for a path present in
    several, the last one wins."""
    merged: dict = {}
    for fs in (flat_state, *flat_states):
      merged.update(fs)
    return FlatState(merged.items(), sort=True)

  def split(self, first, /, *filters):
    predicates = filterlib.filters_to_predicates((first, *filters))
    states = _split_flat(self._paths, self._leaves, predicates, 'split')
    out = [FlatState.from_sorted_keys_values(*s._flat) for s in states]
    return out[0] if len(out) == 1 else tuple(out)

  def filter(self, first, /, *filters):
    predicates = filterlib.filters_to_predicates((first, *filters))
    states = _split_flat(self._paths, self._leaves, predicates, None)
    out = [FlatState.from_sorted_keys_values(*s._flat) for s in states]
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
  _set_parent(state, None)
  return state


_is = operator.is_
_new = object.__new__
_set_raw = State.__dict__['_raw'].__set__
_set_flat = State.__dict__['_flat'].__set__
_set_parent = State.__dict__['_parent'].__set__


def _sort_key(k):
  return (0, k, '') if isinstance(k, int) else (1, 0, str(k))


jax.tree_util.register_pytree_with_keys(
  State, _state_flatten_with_keys, _state_unflatten, _state_flatten
)


# A FlatState is a pytree of its leaves (keyed by position), its paths the
# aux data, as Flax 0.12.8.
def _flat_state_flatten_with_keys(flat):
  return (
    tuple(
      (jax.tree_util.FlattenedIndexKey(i), leaf)
      for i, leaf in enumerate(flat._leaves)
    ),
    flat._paths,
  )


def _flat_state_flatten(flat):
  return tuple(flat._leaves), flat._paths


def _flat_state_unflatten(paths, leaves):
  return FlatState.from_sorted_keys_values(paths, leaves)


jax.tree_util.register_pytree_with_keys(
  FlatState,
  _flat_state_flatten_with_keys,
  _flat_state_unflatten,
  _flat_state_flatten,
)
