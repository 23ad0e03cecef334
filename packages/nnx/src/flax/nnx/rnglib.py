"""Rngs: named streams of PRNG keys.

Each stream holds a key (``jax.random.key(seed)`` for an int seed) and a
uint32 count starting at 0; calling the stream returns
``jax.random.fold_in(key, count)`` and increments the count. ``Rngs(0)``
makes the stream ``default``, which serves every stream not given.

>>> from flax import nnx
>>> import jax
>>> rngs = nnx.Rngs(0, dropout=1)
>>> k = rngs.params()  # no 'params' stream: uses 'default'
>>> bool((jax.random.key_data(k) == jax.random.key_data(
...   jax.random.fold_in(jax.random.key(0), 0))).all())
True
"""

import dataclasses
import functools
import typing as tp
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from flax.nnx import filterlib, graphlib
from flax.nnx._common import MISSING, Missing, graph_updates_default
from flax.nnx._common import resolve_graph
from flax.nnx._rngmethods import KeylessInitializer as KeylessInitializer
from flax.nnx._rngmethods import RngMethods
from flax.nnx.pytreelib import Pytree
from flax.nnx.variablelib import Variable
from flax.nnx._variable_tree import is_array_ref
from flax.nnx.variablelib import _check_trace as check_trace
from flax.typing import Key as Key


class RngState(Variable):
  """Base type of the Variables inside Rng streams."""

  _repr_group = 'RngState'  # a Pytree's repr totals them under this name


class RngKey(RngState):
  """The key of an Rng stream."""


class RngCount(RngState):
  """The call count of an Rng stream."""


def _to_key(value):
  # An int seed, a typed PRNG key, or raw uint32 key data; nothing else.
  if isinstance(value, int):
    return jax.random.key(value)
  if isinstance(value, jax.Array):
    if jnp.issubdtype(value.dtype, jax.dtypes.prng_key):
      return value
    if value.dtype == jnp.uint32 and value.ndim:
      return jax.random.wrap_key_data(value)
  raise ValueError(
    f'Invalid rng value: {value}; an RNG stream needs an int seed or a '
    'jax.Array of jax.dtypes.prng_key sub-dtype (or uint32 raw key data).'
  )


NotKey = filterlib.All(
  filterlib.OfType(RngState), filterlib.Not(filterlib.OfType(RngKey))
)
"""Filter matching the Rng Variables that are not keys (the counts)."""

_FORK_SPLIT_DEPRECATED = (
  "The 'split' argument of 'fork' is deprecated; use the 'split' method "
  'instead.'
)


def _read(var):
  """A stream Variable's stored array (the Ref's content in ref mode)."""
  v = var._raw_value
  return v[...] if is_array_ref(v) else v


def _write(var, value):
  """Stores ``value`` in a stream Variable (into its Ref in ref mode)."""
  var.set_raw_value(value, _unsafe_bypass_check=True)


_TRACER = jax.core.Tracer
_UINT32 = np.dtype('uint32')
_ONE_U32 = np.uint32(1)


def _next_count(count):
  """``count + 1``. Traced, for a uint32 count (the count Rngs make), it
  binds ``jax.lax.add`` itself: the same equation ``+`` stages (``add
  count 1:u32[]``), without ``jax.numpy``'s tracing of ``+``, which costs
  as much as the ``fold_in`` beside it when a model is built abstractly.
  Eagerly ``+`` is the cheaper call (its dispatch is compiled)."""
  if (
    isinstance(count, _TRACER)
    and count.dtype == _UINT32
    and not count.weak_type
  ):
    return jax.lax.add(count, _ONE_U32)
  return count + 1


def _shape(k) -> tuple:
  return (k,) if isinstance(k, int) else tuple(k)


class RngStream(RngMethods, Pytree):
  """One named stream: a key and a count.

  Calling the stream returns ``fold_in(key, count)`` and increments the
  count. The sampling methods (``normal``, ``uniform``, ...) draw the next
  key the same way.

  >>> from flax import nnx
  >>> stream = nnx.Rngs(params=0).params
  >>> stream.uniform((2,)).shape
  (2,)
  >>> int(stream.count[...])
  1
  """

  def __init__(self, key, *, tag: str):
    key = _to_key(key)
    self.tag = tag
    self.key = RngKey(key, tag=tag)
    self.count = RngCount(jnp.zeros(jnp.shape(key), dtype=jnp.uint32), tag=tag)

  def _plain_vars(self) -> bool:
    """Whether the count and key are plain Variables holding arrays (not
    hijax Variables, nor ``ref=True`` ones), read and written in place."""
    count_var = self.count
    return not (
      type(count_var) is not RngCount  # e.g. a hijax Variable
      or is_array_ref(count_var._raw_value)  # ref=True Variables
      or is_array_ref(self.key._raw_value)
    )

  def __call__(self) -> jax.Array:
    count_var = self.count
    if not self._plain_vars():
      count = count_var.get_value()
      count_var.set_value(count + 1)
      return jax.random.fold_in(self.key.get_value(), count)
    check_trace(count_var)  # the count is mutated: same rule as set_value
    count = count_var._raw_value
    out = jax.random.fold_in(self.key._raw_value, count)
    count_var._raw_value = _next_count(count)
    return out

  make_rng = __call__

  def _advance(self) -> jax.Array:
    """Advances the count as a call does, without deriving a key.

    For initializers that never read their key (``zeros``, ``ones``): the
    stream ends where a call leaves it, so every later key is the same.
    Returns the stream's key as it is.
    """
    if type(self).__call__ is not RngStream.__call__ or not self._plain_vars():
      return self()  # a subclass, hijax or ref Variables: a real draw
    count_var = self.count
    check_trace(count_var)
    count_var._raw_value = _next_count(count_var._raw_value)
    return self.key._raw_value

  def _from_key(self, key):
    return type(self)(key, tag=self.tag)

  def fork(self, *, split: int | tuple[int, ...] | None = None):
    """A new stream whose key is drawn from this one (``split`` is
    deprecated: use :meth:`split`)."""
    if split is not None:
      warnings.warn(_FORK_SPLIT_DEPRECATED, DeprecationWarning, stacklevel=2)
      return self.split(split)
    return self._from_key(self())

  def split(self, k: int | tuple[int, ...]):
    """A new stream holding ``k`` keys split from the next key."""
    return self._from_key(jax.random.split(self(), k))

  def broadcast(self, k: int | tuple[int, ...]):
    """A new stream holding the next key repeated to shape ``k``."""
    key = self()
    return self._from_key(jnp.broadcast_to(key, _shape(k)))

  def _clone(self):
    if type(self.count) is not RngCount:  # e.g. a hijax Variable
      new = self._from_key(self.key.get_value())
      new.count.set_value(self.count.get_value())
      return new
    new = self._from_key(_read(self.key))
    _write(new.count, _read(self.count))
    return new


class Rngs(RngMethods, Pytree):
  """A container of named :class:`RngStream` s.

  Args:
    default: seed or key of the ``default`` stream (or a mapping of streams).
    **rngs: seeds or keys of named streams.

  The sampling methods draw from the ``default`` stream:

  >>> from flax import nnx
  >>> import jax
  >>> rngs = nnx.Rngs(0)
  >>> x = rngs.uniform((3,))
  >>> bool((x == jax.random.uniform(nnx.Rngs(0)(), (3,))).all())
  True
  """

  def __init__(self, default=None, /, **rngs):
    if default is not None:
      if isinstance(default, tp.Mapping):
        rngs = {**default, **rngs}
      else:
        rngs = {**rngs, 'default': default}
    for name, value in rngs.items():
      if isinstance(value, RngStream):
        value = _read(value.key)
      setattr(self, name, RngStream(value, tag=name))

  def _get_stream(self, name: str, error_type):
    d = vars(self)
    stream = d.get(name)
    if stream is None:
      stream = d.get('default')
      if stream is None:
        raise error_type(
          f"No RngStream named '{name}' found in Rngs and there is no "
          f"'default' stream to fall back on. Pass it when creating the "
          f'Rngs, e.g. nnx.Rngs({name}=0), or give a default seed: '
          f'nnx.Rngs(0).'
        )
    return stream

  def __getitem__(self, name: str) -> RngStream:
    return self._get_stream(name, KeyError)

  def __getattr__(self, name: str) -> RngStream:
    if name.startswith('__') or name.startswith('_pytree__'):
      raise AttributeError(name)
    return self._get_stream(name, AttributeError)

  def __call__(self) -> jax.Array:
    return self.default()

  def __iter__(self):
    return iter(vars(self))

  def __len__(self):
    return len(vars(self))

  def __contains__(self, name):
    return name in vars(self)

  def items(self):
    return vars(self).items()

  def streams(self):
    return dict(vars(self))

  def _build(self, make_stream) -> 'Rngs':
    out = type(self).__new__(type(self))
    for name, stream in vars(self).items():
      setattr(out, name, make_stream(name, stream))
    return out

  def fork(self, /, *, split=None) -> 'Rngs':
    """New Rngs whose streams are forked from these (``split`` is
    deprecated: use :meth:`split`).

    With a ``split`` mapping ``{filter: k}`` the streams it gives a ``k``
    hold ``k`` split keys and every other stream is forked (its count
    advances), unlike :meth:`split`, which copies the others.
    """
    if split is not None:
      warnings.warn(_FORK_SPLIT_DEPRECATED, DeprecationWarning, stacklevel=2)
      return self._build(
        lambda name, stream: _per_stream(
          split, name, stream, stream.split, stream.fork
        )
      )
    return self._build(lambda name, stream: stream.fork())

  def split(self, k) -> 'Rngs':
    """New Rngs whose streams hold ``k`` split keys.

    ``k`` is an int or shape for every stream, or a mapping
    ``{filter: k}``; streams no filter matches are copied unchanged.
    """
    return self._build(
      lambda name, stream: _per_stream(
        k, name, stream, stream.split, stream._clone
      )
    )

  def broadcast(self, k) -> 'Rngs':
    """New Rngs whose streams hold their next key repeated ``k`` times
    (an int, a shape, or a mapping ``{filter: k}``)."""
    return self._build(
      lambda name, stream: _per_stream(
        k, name, stream, stream.broadcast, stream._clone
      )
    )


def _match_mapping(spec, path, stream):
  """The value of the first filter of ``spec`` matching the stream."""
  for filt, k in spec.items():
    if filterlib.to_predicate(filt)(path, stream.key):
      return True, k
  return False, None


def _per_stream(spec, name, stream, apply, otherwise):
  if isinstance(spec, tp.Mapping):
    found, k = _match_mapping(spec, (name,), stream)
    if not found:
      return otherwise()
    return otherwise() if k is None else apply(k)
  return apply(spec)


# ---------------------------------------------------------------------------
# Finding and rewriting the streams of a node.


def _is_stream_or_var(x):
  return isinstance(x, (RngStream, Variable))


def _tree_key(k):
  for attr in ('name', 'key', 'idx'):
    if hasattr(k, attr):
      return getattr(k, attr)
  return k


def _nnx_path(jax_path) -> tuple:
  return tuple(_tree_key(k) for k in jax_path)


def _iter_streams(node, only=..., graph=None):
  """Yields ``(path, stream)`` for the streams of ``node`` accepted by
  ``only`` (graph traversal, each stream once; or pytree traversal)."""
  predicate = filterlib.to_predicate(only)
  if resolve_graph(graph):
    found = (
      (path, value)
      for path, value in graphlib.iter_graph(node)
      if isinstance(value, RngStream)
    )
  else:
    leaves = jax.tree_util.tree_flatten_with_path(
      node, is_leaf=_is_stream_or_var
    )[0]
    found = (
      (_nnx_path(path), value)
      for path, value in leaves
      if isinstance(value, RngStream)
    )
  for path, stream in found:
    if predicate(path, stream.key):
      yield path, stream


def _in_place(graph, graph_updates) -> bool:
  if graph_updates is None:
    graph_updates = graph_updates_default()
  return resolve_graph(graph) and bool(graph_updates)


def _rewrite_in_place(node, new_key_for, graph):
  """Gives every stream for which ``new_key_for`` returns a key that key
  (count reset); returns the backups of the old keys."""
  backups = []
  for path, stream in _iter_streams(node, graph=graph):
    key = new_key_for(path, stream)
    if key is None:
      continue
    backups.append((stream, _read(stream.key), _read(stream.count)))
    _write(stream.key, key)
    _write(stream.count, jnp.zeros(jnp.shape(key), dtype=jnp.uint32))
  return SplitBackups(backups)


def _rewrite_copy(node, new_key_for):
  """A copy of the pytree ``node`` whose streams are new: the ones for
  which ``new_key_for`` returns a key hold it, the others are copies.
  Variables are shared with ``node``."""

  def visit(path, x):
    if not isinstance(x, RngStream):
      return x
    key = new_key_for(_nnx_path(path), x)
    return x._clone() if key is None else x._from_key(key)

  return jax.tree_util.tree_map_with_path(
    visit, node, is_leaf=_is_stream_or_var
  )


def _graph_nodes(tree):
  return [
    x
    for x in jax.tree_util.tree_leaves(tree, is_leaf=_is_stream_or_var)
    if isinstance(x, Pytree)
  ]


def _apply(node, new_key_for, graph, graph_updates):
  """Runs a stream rewrite on ``node`` (or, with ``node`` missing, returns
  a decorator running it on the arguments of each call)."""
  in_place = _in_place(graph, graph_updates)
  if not isinstance(node, Missing):
    if in_place:
      return _rewrite_in_place(node, new_key_for, graph)
    return _rewrite_copy(node, new_key_for)

  def decorator(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
      if not in_place:
        args, kwargs = _rewrite_copy((args, kwargs), new_key_for)
        return f(*args, **kwargs)
      backups = _rewrite_in_place(
        _graph_nodes((args, kwargs)), new_key_for, True
      )
      try:
        return f(*args, **kwargs)
      finally:
        restore_rngs(backups)

    return wrapper

  return decorator


StreamBackup = tuple  # (stream, key, count)


@dataclasses.dataclass
class SplitBackups:
  """The keys and counts that :func:`split_rngs` / :func:`fork_rngs`
  replaced; :func:`restore_rngs` puts them back. Also a context manager
  that restores on exit.

  >>> from flax import nnx
  >>> rngs = nnx.Rngs(0)
  >>> with nnx.split_rngs(rngs, splits=4):
  ...   rngs.default.key.shape
  (4,)
  >>> rngs.default.key.shape
  ()
  """

  backups: list

  def __iter__(self):
    return iter(self.backups)

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    restore_rngs(self)
    return False

  def replace(self, **changes) -> 'SplitBackups':
    return dataclasses.replace(self, **changes)


def restore_rngs(backups, /) -> None:
  """Puts back the keys and counts saved in ``backups``."""
  for stream, key, count in backups:
    _write(stream.key, key)
    _write(stream.count, count)


def backup_keys(node, /, *, graph=None) -> list:
  """The current ``(stream, key, count)`` of every stream of ``node``."""
  return [
    (stream, _read(stream.key), _read(stream.count))
    for _, stream in _iter_streams(node, graph=graph)
  ]


def split_rngs(
  node=MISSING,
  /,
  *,
  splits: int | tuple[int, ...],
  only=...,
  squeeze: bool = False,
  graph=None,
  graph_updates=None,
):
  """Splits the keys of the Rng streams of ``node`` into ``splits`` keys.

  In graph mode with graph updates (the default) the streams change in
  place and the result is a :class:`SplitBackups` (restore with
  :func:`restore_rngs` or a ``with`` block). Otherwise (``graph=False`` or
  ``graph_updates=False``) ``node`` keeps its streams (their counts move
  on) and a copy of it with split streams is returned. Without ``node`` it
  is a decorator that splits the streams found in the arguments of each
  call (and, in place, restores them afterwards).

  >>> from flax import nnx
  >>> rngs = nnx.Rngs(0)
  >>> nnx.split_rngs(rngs, splits=3, graph=False).default.key.shape
  (3,)
  """
  predicate = filterlib.to_predicate(only)

  def new_key_for(path, stream):
    if not predicate(path, stream.key):
      return None
    key = jax.random.split(stream(), splits)
    if squeeze:
      key = key[0]
    return key

  return _apply(node, new_key_for, graph, graph_updates)


def fork_rngs(
  node=MISSING, /, *, split=None, only=..., graph=None, graph_updates=None
):
  """Replaces the keys of the Rng streams of ``node`` with keys drawn from
  them.

  ``split`` is None (fork every stream), an int or shape (split every
  stream), or a mapping ``{filter: k}`` (``k`` None forks; streams no
  filter matches are left alone). Modes and the decorator form are those
  of :func:`split_rngs`.

  >>> from flax import nnx
  >>> rngs = nnx.Rngs(0, params=1)
  >>> new = nnx.fork_rngs(rngs, split={'params': 2}, graph=False)
  >>> new.params.key.shape, new.default.key.shape
  ((2,), ())
  """
  predicate = filterlib.to_predicate(only)

  def new_key_for(path, stream):
    if not predicate(path, stream.key):
      return None
    if isinstance(split, tp.Mapping):
      found, k = _match_mapping(split, path, stream)
      if not found:
        return None
    else:
      k = split
    key = stream()
    return key if k is None else jax.random.split(key, k)

  return _apply(node, new_key_for, graph, graph_updates)


@dataclasses.dataclass(frozen=True)
class _WithRngsRule:
  """One filter of a ``with_rngs`` argument and the count it gives."""

  kind: str  # 'split', 'broadcast' or 'fork'
  filter: tp.Any
  predicate: tp.Callable
  k: tp.Any = None

  @property
  def catch_all(self) -> bool:
    # `...` and `True` are defaults: they never conflict with another rule.
    return self.filter is ... or self.filter is True


def _with_rngs_rules(spec, *, sized: bool) -> tuple:
  """The ``(filter, k)`` pairs of a ``split``/``broadcast`` argument (a
  mapping, or a count for every stream) or the filters of ``fork`` (one
  filter, or a tuple/list of filters tried in order)."""
  if spec is None:
    return ()
  if sized:
    pairs = spec.items() if isinstance(spec, tp.Mapping) else [(..., spec)]
  else:
    filters = spec if isinstance(spec, (tuple, list)) else (spec,)
    pairs = [(f, None) for f in filters]
  return tuple((f, filterlib.to_predicate(f), k) for f, k in pairs)


def _matched_rules(rules, path, stream) -> list:
  """For each of split, broadcast and fork (in that order), the first of
  its filters that matches the stream."""
  matched = []
  for kind, pairs in rules:
    for filt, predicate, k in pairs:
      if predicate(path, stream.key):
        matched.append(_WithRngsRule(kind, filt, predicate, k))
        break
  return matched


def with_rngs(
  node=MISSING,
  /,
  *,
  split=None,
  fork=None,
  broadcast=None,
  only=True,
  graph=None,
  graph_updates=None,
):
  """Returns a copy of ``node`` with new Rng streams.

  Among the streams accepted by ``only``, those ``split`` names (an int or
  shape for all, or ``{filter: k}``, first matching filter) hold ``k``
  keys split from their next key; otherwise those ``broadcast`` names
  (same forms) hold their next key repeated ``k`` times; otherwise those
  matching the ``fork`` filter (or one of a tuple/list of filters) hold
  their next key. Other streams are copied unchanged; Variables are
  shared with ``node``. Without ``node`` it is a decorator applying this
  to the arguments.

  A stream named by more than one of ``split``, ``broadcast`` and ``fork``
  through filters other than ``...`` and ``True`` (which only give
  defaults) is ambiguous: ``ValueError`` ("matches multiple rules").

  ``with_rngs`` always returns new objects, so it refuses graph mode with
  graph updates (``NotImplementedError``, as Flax 0.12.8, including under
  the default settings): pass ``graph=False`` or ``graph_updates=False``.

  >>> from flax import nnx
  >>> rngs = nnx.Rngs(0, params=1)
  >>> new = nnx.with_rngs(
  ...   rngs, split={'params': 2}, broadcast=3, graph=False)
  >>> new.params.key.shape, new.default.key.shape
  ((2,), (3,))
  """
  if _in_place(graph, graph_updates):
    raise NotImplementedError(
      'nnx.with_rngs returns copies of the streams and cannot update a '
      'graph in place: graph=True and graph_updates=True is not supported '
      'for `with_rngs`. Pass graph=False or graph_updates=False.'
    )
  only_pred = filterlib.to_predicate(only)
  rules = (
    ('split', _with_rngs_rules(split, sized=True)),
    ('broadcast', _with_rngs_rules(broadcast, sized=True)),
    ('fork', _with_rngs_rules(fork, sized=False)),
  )

  def new_key_for(path, stream):
    if not only_pred(path, stream.key):
      return None
    matched = _matched_rules(rules, path, stream)
    if not matched:
      return None
    if sum(not m.catch_all for m in matched) > 1:
      lines = ''.join(
        f'\n  - {m.kind} matches filter {m.filter!r}' for m in matched
      )
      raise ValueError(
        f'RngStream at path {path} matches multiple rules:{lines}'
      )
    first = matched[0]
    if first.kind == 'split':
      return jax.random.split(stream(), first.k)
    if first.kind == 'broadcast':
      return jnp.broadcast_to(stream(), _shape(first.k))
    return stream()

  if not isinstance(node, Missing):
    return _rewrite_copy(node, new_key_for)

  def decorator(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
      args, kwargs = _rewrite_copy((args, kwargs), new_key_for)
      return f(*args, **kwargs)

    return wrapper

  return decorator


def reseed(
  node, /, *, graph=None, policy='scalars_only', **stream_keys
) -> None:
  """Gives the named streams of ``node`` new keys drawn from
  ``nnx.Rngs(**stream_keys)`` (one draw per stream, in traversal order),
  with counts reset to 0.

  ``policy`` says what a stream with a non-scalar key (split under
  ``vmap``) gets: ``'scalars_only'`` refuses it, ``'match_shape'`` splits
  the drawn key to the stream's key shape, and a callable
  ``policy(path, key, shape)`` returns the new keys.

  >>> from flax import nnx
  >>> rngs = nnx.Rngs(params=0)
  >>> _ = rngs.params()
  >>> nnx.reseed(rngs, params=1)
  >>> int(rngs.params.count[...])
  0
  """
  if not (policy in ('scalars_only', 'match_shape') or callable(policy)):
    raise ValueError(
      'reseed policy must be "scalars_only", "match_shape" or a callable '
      f'(path, key, shape) -> keys; got {policy!r}.'
    )
  source = Rngs(**stream_keys)
  for path, stream in list(_iter_streams(node, graph=graph)):
    if stream.tag not in stream_keys:
      continue
    shape = tuple(_read(stream.key).shape)
    key = source[stream.tag]()
    if policy == 'scalars_only' and shape:
      raise ValueError(
        f'Cannot reseed stream at path {path}: its key is not a scalar '
        f'(shape {shape}). Pass policy="match_shape" when every key along '
        'those axes should differ, or a custom policy callable.'
      )
    if callable(policy):
      key = policy(path, key, shape)
    elif policy == 'match_shape' and shape:
      key = jax.random.split(key, shape)
    _write(stream.key, key)
    _write(stream.count, jnp.zeros(jnp.shape(key), dtype=jnp.uint32))
