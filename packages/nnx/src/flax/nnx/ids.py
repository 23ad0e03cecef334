"""Process-wide unique ids for NNX objects.

>>> import copy
>>> from flax.nnx import ids
>>> a, b = ids.uuid(), ids.uuid()
>>> a == b, a == ids.UUID(a.id), copy.copy(a) == a
(False, True, False)
"""

import itertools
import threading


class UUID:
  """A unique id: compares and hashes as its integer ``id``.

  A copy (``copy.copy`` or ``copy.deepcopy``) is a fresh id, so a copied
  object never shares its identity with the original; pickling keeps the id.
  """

  def __init__(self, rawid: int):
    self.id = rawid

  def __eq__(self, other):
    return isinstance(other, UUID) and self.id == other.id

  def __hash__(self):
    return hash(self.id)

  def __repr__(self):
    return f'UUID({self.id})'

  def __copy__(self):
    return uuid()

  def __deepcopy__(self, memo):
    del memo
    return uuid()


class UUIDManager:
  """Hands out increasing :class:`UUID` s (thread-safe)."""

  def __init__(self):
    self._counter = itertools.count(1)
    self._lock = threading.Lock()

  def __call__(self):
    with self._lock:
      return UUID(next(self._counter))


uuid = UUIDManager()
