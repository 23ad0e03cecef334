"""PRNG streams of a :class:`~flax.core.Scope`: a root key plus static data.

Keys are derived exactly as Flax does, so that the same seed gives the same
parameters: the static items of a stream (child scope names and call
counters) are hashed with SHA-1 and the first four bytes of the digest,
read as a big-endian ``uint32``, are folded into the root key with
``jax.random.fold_in``.
"""

import dataclasses
import functools
import hashlib
from collections.abc import Sequence
from typing import Any, Union

import jax
import numpy as np

PRNGKey = Any
PRNGFoldable = Union[int, str]


def _suffix_hash(data: tuple, separate: bool) -> np.uint32:
  """The first four bytes of the SHA-1 digest of ``data``, big-endian."""
  digest = hashlib.sha1()
  for item in data:
    if separate:
      digest.update(b'\x00')
    if isinstance(item, str):
      digest.update(item.encode('utf-8'))
    elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
      item = int(item)
      digest.update(item.to_bytes((item.bit_length() + 7) // 8, 'big'))
    else:
      raise ValueError(f'Expected int or string, got: {item!r}')
  return np.uint32(int.from_bytes(digest.digest()[:4], byteorder='big'))


# Suffix hashes already computed, keyed by the separator flag, the items
# and their types (so that ``True`` or ``1.0`` never reuse the hash of ``1``).
_SUFFIX_HASHES: dict = {}
_MAX_CACHED_HASHES = 1 << 16


def _fold_in_static(rng: PRNGKey, data: Sequence[PRNGFoldable]) -> PRNGKey:
  """Folds static strings and ints into ``rng`` through one SHA-1 hash.

  An empty ``data`` returns ``rng`` unchanged.

  Args:
    rng: a JAX PRNG key (raw ``uint32`` or typed).
    data: the items to fold in, in order.

  Returns:
    The derived key.
  """
  if not data:
    return rng
  from flax import config

  data = tuple(data)
  separate = config.flax_fix_rng_separator
  try:
    cache_key = (separate, data, tuple(map(type, data)))
    hashed = _SUFFIX_HASHES.get(cache_key)
  except TypeError:  # an unhashable item: _suffix_hash rejects it
    cache_key, hashed = None, None
  if hashed is None:
    hashed = _suffix_hash(data, separate)
    if cache_key is not None:
      if len(_SUFFIX_HASHES) >= _MAX_CACHED_HASHES:
        _SUFFIX_HASHES.clear()
      _SUFFIX_HASHES[cache_key] = hashed
  # ``jax.random.fold_in`` as it is now, called with the caller's key: a
  # patched ``fold_in`` or a changed PRNG configuration sees every call.
  # ``hashed`` is a NumPy ``uint32``: fold_in takes it as the same
  # ``uint32`` a ``jnp.uint32`` would be, without making a JAX array first.
  return jax.random.fold_in(rng, hashed)


@dataclasses.dataclass(slots=True)
class LazyRng:
  """A PRNG key together with static items still to be folded into it.

  Folding is deferred until a key is needed (:meth:`as_jax_rng`), so
  creating child scopes costs nothing. ``LazyRng`` is a pytree whose only
  leaf is the root key; the suffix is static.

  >>> import jax
  >>> from flax.core.scope import LazyRng
  >>> rng = LazyRng.create(jax.random.key(0), 'dense', 1)
  >>> rng.suffix, rng.replace(suffix=()).suffix
  (('dense', 1), ())

  Attributes:
    rng: the root key.
    suffix: a tuple of strings and ints.
  """

  rng: PRNGKey
  suffix: tuple[PRNGFoldable, ...]

  def replace(self, **changes) -> 'LazyRng':
    """Returns a copy with the given fields replaced."""
    return dataclasses.replace(self, **changes)

  def as_jax_rng(self) -> PRNGKey:
    """Returns the key with the suffix folded in."""
    return _fold_in_static(self.rng, self.suffix)

  @staticmethod
  def create(rng: Union['LazyRng', PRNGKey], *suffix: PRNGFoldable):
    """Returns a ``LazyRng`` for ``rng`` with ``suffix`` appended."""
    if isinstance(rng, LazyRng):
      return LazyRng(rng.rng, rng.suffix + suffix)
    return LazyRng(rng, suffix)

  def clear_suffix(self) -> 'LazyRng':
    """Returns an equivalent ``LazyRng`` with the suffix folded in."""
    return LazyRng(self.as_jax_rng(), ())


# Flax's public home of the class (it is re-exported there).
LazyRng.__module__ = 'flax.core.scope'


# The static data is the tuple of static fields, ``(suffix,)``.
def _flatten_lazy_rng(x):
  return ((jax.tree_util.GetAttrKey('rng'), x.rng),), (x.suffix,)


def _unflatten_lazy_rng(static, children):
  return LazyRng(children[0], static[0])


jax.tree_util.register_pytree_with_keys(
  LazyRng,
  _flatten_lazy_rng,
  _unflatten_lazy_rng,
  flatten_func=lambda x: ((x.rng,), (x.suffix,)),
)


def is_valid_rng(rng: Any) -> bool:
  """Returns whether ``rng`` is a single JAX PRNG key (raw or typed)."""
  if isinstance(rng, LazyRng):
    return True
  if not isinstance(rng, (np.ndarray, jax.Array)):
    return False
  if jax.dtypes.issubdtype(rng.dtype, jax.dtypes.prng_key):
    return rng.shape == ()
  shape, dtype = _raw_key_spec()
  return rng.shape == shape and rng.dtype == dtype


@functools.cache
def _raw_key_spec():
  spec = jax.eval_shape(lambda: jax.random.key_data(jax.random.key(0)))
  return spec.shape, spec.dtype


def is_valid_rngs(rngs: Any) -> bool:
  """Returns whether ``rngs`` maps stream names to valid PRNG keys."""
  from collections.abc import Mapping

  if not isinstance(rngs, Mapping):
    return False
  return all(
    isinstance(name, str) and is_valid_rng(rng) for name, rng in rngs.items()
  )


def tree_map_rngs(fn, tree):
  """Maps ``fn`` over the PRNG keys in ``tree`` (typed keys are leaves)."""
  return jax.tree_util.tree_map(
    fn,
    tree,
    is_leaf=lambda x: (
      hasattr(x, 'dtype')
      and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)
    ),
  )
