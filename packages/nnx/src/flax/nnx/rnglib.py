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

import functools
import typing as tp

import jax
import jax.numpy as jnp

from flax.nnx import filterlib, graphlib
from flax.nnx.pytreelib import Pytree
from flax.nnx.variablelib import Variable


class RngState(Variable):
  """Base type of the Variables inside Rng streams."""


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


class RngStream(Pytree):
  """One named stream: a key and a count."""

  def __init__(self, key, *, tag: str):
    key = _to_key(key)
    self.tag = tag
    self.key = RngKey(key, tag=tag)
    self.count = RngCount(jnp.zeros(jnp.shape(key), dtype=jnp.uint32), tag=tag)

  def __call__(self) -> jax.Array:
    key = self.key.raw_value
    count = self.count.raw_value
    if jnp.ndim(key):
      out = jax.vmap(jax.random.fold_in)(key, count)
    else:
      out = jax.random.fold_in(key, count)
    self.count.raw_value = count + 1
    return out

  make_rng = __call__

  def fork(self, *, split: int | tuple[int, ...] | None = None):
    """A new stream whose key is drawn from this one."""
    key = self()
    if split is not None:
      key = jax.random.split(key, split)
    return type(self)(key, tag=self.tag)

  def split(self, k):
    return self.fork(split=k)


class Rngs(Pytree):
  """A container of named :class:`RngStream` s.

  Args:
    default: seed or key of the ``default`` stream (or a mapping of streams).
    **rngs: seeds or keys of named streams.
  """

  def __init__(self, default=None, /, **rngs):
    if default is not None:
      if isinstance(default, tp.Mapping):
        rngs = {**default, **rngs}
      else:
        rngs = {**rngs, 'default': default}
    for name, value in rngs.items():
      if isinstance(value, RngStream):
        value = value.key.raw_value
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

  def fork(self, /, *, split=None) -> 'Rngs':
    """Returns new Rngs with keys drawn from these streams.

    ``split`` is an int/shape (all streams) or a mapping
    ``{filter: splits}``.
    """
    new = {}
    for name, stream in vars(self).items():
      k = _split_for(split, name, stream)
      new[name] = stream.fork(split=k)
    out = type(self).__new__(type(self))
    for name, stream in new.items():
      setattr(out, name, stream)
    return out

  def split(self, k) -> 'Rngs':
    return self.fork(split=k)


def _split_for(split, name, stream):
  if split is None or isinstance(split, (int, tuple)):
    return split
  for filt, k in split.items():
    if filterlib.to_predicate(filt)((name,), stream.key):
      return k
  return None


def _iter_streams(node, only):
  predicate = filterlib.to_predicate(only)
  for path, value in graphlib.iter_graph(node):
    if isinstance(value, RngStream) and predicate(path, value.key):
      yield path, value


class SplitBackups:
  """Saved keys and counts of split streams; ``restore_rngs`` puts them
  back. Also a context manager."""

  def __init__(self, backups):
    self.backups = backups

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    restore_rngs(self)
    return False


def restore_rngs(backups: SplitBackups) -> None:
  for stream, key, count in backups.backups:
    stream.key.raw_value = key
    stream.count.raw_value = count


def _split_nodes(nodes, splits, only, squeeze, fork_only):
  backups = []
  seen = set()
  for node in nodes:
    for _, stream in _iter_streams(node, only):
      if id(stream) in seen:
        continue
      seen.add(id(stream))
      key = stream()
      backups.append((stream, stream.key.raw_value, stream.count.raw_value))
      if not fork_only or splits is not None:
        key = jax.random.split(key, splits)
        if squeeze:
          key = key[0]
      stream.key.raw_value = key
      stream.count.raw_value = jnp.zeros(key.shape, dtype=jnp.uint32)
  return SplitBackups(backups)


def _is_rng_container(x):
  return isinstance(x, (Pytree, Variable))


def split_rngs(
  node=None,
  /,
  *,
  splits: int | tuple[int, ...],
  only=...,
  squeeze: bool = False,
  graph=None,
):
  """Splits the keys of the Rng streams in ``node`` into ``splits`` keys.

  Used directly it returns :class:`SplitBackups` (restore with
  ``nnx.restore_rngs`` or a ``with`` block). Used as a decorator
  (``@nnx.split_rngs(splits=n)``) it splits the streams found in the
  arguments before the call and restores them after.
  """
  if node is None:

    def decorator(f):
      @functools.wraps(f)
      def wrapper(*args, **kwargs):
        nodes = _graph_leaves((args, kwargs))
        backups = _split_nodes(nodes, splits, only, squeeze, False)
        try:
          return f(*args, **kwargs)
        finally:
          restore_rngs(backups)

      return wrapper

    return decorator
  return _split_nodes(_graph_leaves(node), splits, only, squeeze, False)


def fork_rngs(node=None, /, *, split=None, only=..., graph=None):
  """Replaces the keys of the Rng streams in ``node`` with keys drawn from
  them (split into ``split`` keys if given); like :func:`split_rngs`, it
  can be used as a decorator."""
  if node is None:

    def decorator(f):
      @functools.wraps(f)
      def wrapper(*args, **kwargs):
        nodes = _graph_leaves((args, kwargs))
        backups = _split_nodes(nodes, split, only, False, True)
        try:
          return f(*args, **kwargs)
        finally:
          restore_rngs(backups)

      return wrapper

    return decorator
  return _split_nodes(_graph_leaves(node), split, only, False, True)


def _graph_leaves(tree):
  return [
    x
    for x in jax.tree_util.tree_leaves(tree, is_leaf=_is_rng_container)
    if isinstance(x, Pytree)
  ]


def reseed(node, /, *, policy='scalars_only', **stream_keys) -> None:
  """Resets the named streams in ``node`` to new seeds (count 0).

  >>> from flax import nnx
  >>> rngs = nnx.Rngs(params=0)
  >>> _ = rngs.params()
  >>> nnx.reseed(rngs, params=0)
  >>> int(rngs.params.count.value)
  0
  """
  for _, stream in _iter_streams(node, ...):
    if stream.tag in stream_keys:
      key = _to_key(stream_keys[stream.tag])
      old = stream.key.raw_value
      if jnp.shape(old) and not jnp.shape(key):
        key = jax.random.split(key, jnp.shape(old))
      stream.key.raw_value = key
      stream.count.raw_value = jnp.zeros(jnp.shape(key), dtype=jnp.uint32)


def backup_keys(node, /):
  return [
    (stream, stream.key.raw_value, stream.count.raw_value)
    for _, stream in _iter_streams(node, ...)
  ]
