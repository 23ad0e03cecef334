"""Process-wide unique ids for NNX objects.

>>> from flax.nnx import ids
>>> a, b = ids.uuid(), ids.uuid()
>>> a == b, a == ids.UUID(a.rawid)
(False, True)
"""

import itertools
import threading


class UUID:
  """A unique id: compares and hashes as its integer ``rawid``."""

  __slots__ = ('rawid',)

  def __init__(self, rawid):
    self.rawid = rawid

  def __eq__(self, other):
    return isinstance(other, UUID) and self.rawid == other.rawid

  def __hash__(self):
    return hash(self.rawid)

  def __repr__(self):
    return f'UUID({self.rawid})'

  def __deepcopy__(self, memo):
    del memo
    return self


class UUIDManager:
  """Hands out increasing :class:`UUID` s (thread-safe)."""

  def __init__(self):
    self._counter = itertools.count(1)
    self._lock = threading.Lock()

  def __call__(self):
    with self._lock:
      return UUID(next(self._counter))


uuid = UUIDManager()
