"""``PrefetchIterator``: reads an iterator ahead in a background thread.

>>> from flax.training.prefetch_iterator import PrefetchIterator
>>> list(PrefetchIterator(iter(range(5)), buffer_size=2))
[0, 1, 2, 3, 4]
"""

import collections
import threading

__all__ = ['PrefetchIterator']


class PrefetchIterator:
  """Wraps an iterator and fetches up to ``buffer_size`` items ahead.

  An error raised by the wrapped iterator is raised by ``next`` once the
  items fetched before it have been consumed, and again by every later
  ``next``. Call ``close()`` to stop the background thread early.

  Args:
    data_iter: the iterator (or iterable) to read.
    buffer_size: how many items to keep ready.
  """

  def __init__(self, data_iter, buffer_size: int = 1):
    self.buffer_size = buffer_size
    self._source = iter(data_iter)
    self._ready = collections.deque()
    self._failure = None
    self._open = True
    # Guards the three fields above; notified whenever one of them changes.
    self._changed = threading.Condition()
    self._worker = threading.Thread(target=self._produce, daemon=True)
    self._worker.start()

  def __iter__(self):
    return self

  def __next__(self):
    with self._changed:
      self._changed.wait_for(lambda: self._ready or not self._open)
      if not self._ready:
        if self._failure is not None:
          raise self._failure
        raise StopIteration
      self._changed.notify_all()
      return self._ready.popleft()

  def close(self):
    """Stops prefetching."""
    with self._changed:
      self._open = False
      self._changed.notify_all()

  def _wait_for_room(self) -> bool:
    """Blocks until another item may be fetched; False once closed."""
    with self._changed:
      self._changed.wait_for(
        lambda: len(self._ready) < self.buffer_size or not self._open
      )
      return self._open

  def _produce(self):
    """The background thread: fills the buffer until the source ends."""
    while self._wait_for_room():
      try:
        item = next(self._source)
      except StopIteration:
        break
      except Exception as e:  # noqa: BLE001 - handed to the consumer.
        with self._changed:
          self._failure = e
        break
      with self._changed:
        self._ready.append(item)
        self._changed.notify_all()
    self.close()
