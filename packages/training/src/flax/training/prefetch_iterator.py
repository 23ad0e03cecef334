"""``PrefetchIterator``: reads an iterator ahead in a background thread.

>>> from flax.training.prefetch_iterator import PrefetchIterator
>>> list(PrefetchIterator(iter(range(5)), buffer_size=2))
[0, 1, 2, 3, 4]
"""

import threading

__all__ = ['PrefetchIterator']


class PrefetchIterator:
  """Wraps an iterator and fetches up to ``buffer_size`` items ahead.

  An error raised by the wrapped iterator is raised again by ``next`` once
  the items fetched before it have been consumed. Call ``close()`` to stop
  the background thread early.

  Args:
    data_iter: the iterator (or iterable) to read.
    buffer_size: how many items to keep ready.
  """

  def __init__(self, data_iter, buffer_size: int = 1):
    self._data_iter = iter(data_iter)
    self.buffer_size = buffer_size
    self._cond = threading.Condition()
    self._buffer = []
    self._active = True
    self._error = None
    self._thread = threading.Thread(target=self._prefetch_loop, daemon=True)
    self._thread.start()

  def __iter__(self):
    return self

  def __next__(self):
    with self._cond:
      self._cond.wait_for(lambda: self._buffer or not self._active)
      if self._buffer:
        item = self._buffer.pop(0)
        self._cond.notify_all()
        return item
      if self._error is not None:
        error, self._error = self._error, None
        raise error
      raise StopIteration

  def close(self):
    """Stops prefetching."""
    with self._cond:
      self._active = False
      self._cond.notify_all()

  def _prefetch_loop(self):
    def has_room():
      return len(self._buffer) < self.buffer_size or not self._active

    while True:
      with self._cond:
        self._cond.wait_for(has_room)
        if not self._active:
          return
      try:
        item = next(self._data_iter)
      except StopIteration:
        self.close()
        return
      except Exception as e:  # noqa: BLE001 - handed to the consumer.
        with self._cond:
          self._error = e
        self.close()
        return
      with self._cond:
        self._buffer.append(item)
        self._cond.notify_all()
