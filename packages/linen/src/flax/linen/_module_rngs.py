"""Helpers of the lifted transforms that act on a bound Module's scope.

>>> import jax, jax.numpy as jnp
>>> from flax import linen as nn
>>> class Twice(nn.Module):
...   @nn.compact
...   def __call__(self):
...     outer = self.make_rng('params')
...     with nn.transforms.fork_rngs(self):
...       inner = self.make_rng('params')
...     return outer, inner
>>> (outer, inner), _ = Twice().init_with_output(jax.random.key(0))
>>> bool((jax.random.key_data(outer) != jax.random.key_data(inner)).any())
True
"""

import contextlib

from flax.core.scope import LazyRng
from flax.linen.module import Module


@contextlib.contextmanager
def fork_rngs(module: Module):
  """Gives every RNG stream of ``module``'s scope a fresh root for a block.

  On entry one key is drawn from each stream of the bound ``module`` (which
  advances the stream, as ``make_rng`` does) and becomes the root of that
  stream inside the ``with`` block; the per-stream counters carry on. On
  exit the original roots come back, so keys drawn after the block continue
  the original streams.

  Args:
    module: a Module bound to a scope (inside ``init``/``apply``).

  Yields:
    None.
  """
  scope = module.scope
  if scope is None:
    raise ValueError(
      f'fork_rngs needs a bound Module; {type(module).__name__} is not bound '
      'to a scope (call it inside init/apply, or bind it first).'
    )
  original = scope.rngs
  forked = {name: LazyRng.create(scope.make_rng(name)) for name in original}
  scope.rngs = forked
  try:
    yield
  finally:
    scope.rngs = original


def clean_clone(x):
  """``x`` without a scope: a Module is cloned unbound (``parent=None``);
  any other value is returned as it is.

  >>> from flax import linen as nn
  >>> class Scale(nn.Module):
  ...   factor: float = 3.0
  ...   def __call__(self, x):
  ...     return x * self.factor
  >>> scale = Scale()
  >>> clone = nn.transforms.clean_clone(scale)
  >>> clone is scale, clone.scope is None, clone.factor
  (False, True, 3.0)
  >>> nn.transforms.clean_clone([1, 2])
  [1, 2]
  """
  if isinstance(x, Module):
    return x.clone(parent=None)
  return x
