"""Unique ids for Flax objects (e.g. to tell Module instances apart).

>>> from flax import ids
>>> a, b = ids.uuid(), ids.uuid()
>>> a == b, a == a
(False, True)
"""

import itertools
import threading

__all__ = ['FlaxId', 'UUIDManager', 'uuid']


class UUIDManager:
  """Hands out increasing ``FlaxId`` values; thread-safe."""

  def __init__(self):
    self._lock = threading.Lock()
    self._counter = itertools.count(1)

  def __call__(self) -> 'FlaxId':
    with self._lock:
      return FlaxId(next(self._counter))


uuid = UUIDManager()


class FlaxId:
  """A unique id. Copies of an object get a fresh id."""

  __slots__ = ('id',)

  def __init__(self, rawid: int):
    self.id = rawid

  def __eq__(self, other):
    return isinstance(other, FlaxId) and other.id == self.id

  def __hash__(self):
    return hash(self.id)

  def __repr__(self):
    return f'FlaxId({self.id})'

  def __copy__(self):
    return uuid()

  def __deepcopy__(self, memo):
    del memo
    return uuid()
