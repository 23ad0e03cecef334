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


# Names NNX no longer defines but still answers, with a DeprecationWarning
# on every access: ``{old name: current name}``. They are not listed by
# ``dir(nnx)``.
REMOVED_ALIASES = {'VariableState': 'Variable'}


def removed_alias(namespace: tp.Mapping[str, tp.Any], name: str):
  """Warns and returns what ``name`` (a key of :data:`REMOVED_ALIASES`)
  now stands for in ``namespace``.

  >>> import warnings
  >>> from flax import nnx
  >>> with warnings.catch_warnings(record=True) as caught:
  ...   warnings.simplefilter('always')
  ...   nnx.VariableState is nnx.Variable, caught[0].category.__name__
  (True, 'DeprecationWarning')
  """
  current = REMOVED_ALIASES[name]
  warnings.warn(
    f'{name!r} was removed and is now only an alias of {current!r}; use '
    f'{current!r} directly instead.',
    DeprecationWarning,
    stacklevel=3,
  )
  return namespace[current]
