"""Deprecated aliases of NNX functions.

>>> import warnings
>>> from flax.nnx import deprecations
>>> def add_one(x):
...   return x + 1
>>> old = deprecations.deprecated(add_one)
>>> with warnings.catch_warnings(record=True) as caught:
...   warnings.simplefilter('always')
...   old(1), caught[0].category.__name__
(2, 'DeprecationWarning')
"""

import functools
import typing as tp
import warnings

F = tp.TypeVar('F', bound=tp.Callable[..., tp.Any])


def deprecated(new_fn: F) -> F:
  """Wraps ``new_fn`` so that calling it warns that the old name is
  deprecated in favour of ``new_fn``."""

  @functools.wraps(new_fn)
  def wrapper(*args, **kwargs):
    warnings.warn(
      f'This function is deprecated; use {new_fn.__name__} instead.',
      DeprecationWarning,
      stacklevel=2,
    )
    return new_fn(*args, **kwargs)

  return tp.cast(F, wrapper)
