"""``nn.BatchApply``: apply a function to inputs with merged batch axes.

>>> import jax.numpy as jnp
>>> from flax import linen as nn
>>> x = jnp.ones((2, 3, 4))
>>> nn.BatchApply(lambda y: y.sum(-1))(x).shape
(2, 3)
"""

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
  'BatchApply',
  'arbitrary_mergeable_leaf',
  'merge_leading_dims',
  'ndim_at_least',
  'split_leading_dim',
]


def ndim_at_least(x, num_dims) -> bool:
  """Whether ``x`` (converted to an array if needed) has ``num_dims`` axes."""
  if not isinstance(x, (jax.Array, np.ndarray)):
    x = np.asarray(x)
  return x.ndim >= num_dims


def arbitrary_mergeable_leaf(min_num_dims, args, kwargs):
  """The first leaf of ``(args, kwargs)`` with at least ``min_num_dims`` axes.

  Raises:
    ValueError: if there is none.
  """
  for leaf in jax.tree_util.tree_leaves((args, kwargs)):
    if ndim_at_least(leaf, min_num_dims):
      return leaf
  raise ValueError(
    f'BatchApply requires at least one input with ndim >= {min_num_dims}.'
  )


def merge_leading_dims(x, num_dims):
  """Merges the first ``num_dims`` axes of ``x`` into one.

  Values with fewer axes are returned unchanged.
  """
  if not ndim_at_least(x, num_dims):
    return x
  return jnp.reshape(x, (-1,) + tuple(x.shape[num_dims:]))


def split_leading_dim(x, to_dim):
  """Splits the first axis of ``x`` into ``to_dim`` (a shape tuple)."""
  x = jnp.asarray(x)
  return jnp.reshape(x, tuple(to_dim) + tuple(x.shape[1:]))


class BatchApply:
  """Calls ``f`` with the leading ``num_dims`` axes of its inputs merged.

  The leading axes of the outputs are split back to the shape of the first
  input that has at least ``num_dims`` axes. Useful to apply a layer that
  expects ``(batch, features)`` to ``(time, batch, features)`` data.

  >>> import jax.numpy as jnp
  >>> from flax import linen as nn
  >>> y, x = nn.BatchApply(lambda a, b: (a * b, a))(
  ...     jnp.ones((2, 3, 4)), jnp.ones((2, 3, 4)))
  >>> y.shape
  (2, 3, 4)

  Args:
    f: the function to call.
    num_dims: how many leading axes to merge.
  """

  def __init__(self, f, num_dims=2):
    self._f = f
    self.num_dims = num_dims

  def __call__(self, *args, **kwargs):
    example = arbitrary_mergeable_leaf(self.num_dims, args, kwargs)
    leading = example.shape[: self.num_dims]

    def merge(x):
      return merge_leading_dims(x, self.num_dims)

    args, kwargs = jax.tree_util.tree_map(merge, (args, kwargs))
    outputs = self._f(*args, **kwargs)
    return jax.tree_util.tree_map(
      lambda x: split_leading_dim(x, leading), outputs
    )
