"""``Sequential``: chain NNX modules and plain functions."""

from __future__ import annotations

import inspect
import typing as tp

from flax import nnx


def _layers_container(fns):
  container = getattr(nnx, 'List', None)
  if container is None:
    return list(fns)
  return container(fns)


def _accepts_rngs(f) -> bool:
  try:
    params = inspect.signature(f).parameters
  except (TypeError, ValueError):
    return False
  return 'rngs' in params or any(
    p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
  )


class Sequential(nnx.Module):
  """Calls its layers in order, each on the output of the previous one.

  A tuple output is passed on as positional arguments, a dict output as
  keyword arguments. The layers are stored in the ``layers`` attribute
  (state paths ``layers/0/...``, ``layers/1/...``).

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> rngs = nnx.Rngs(0)
  >>> model = nnx.Sequential(
  ...   nnx.Linear(2, 8, rngs=rngs), nnx.relu, nnx.Linear(8, 3, rngs=rngs)
  ... )
  >>> model(jnp.ones((1, 2))).shape
  (1, 3)

  Args:
    *fns: the callables to chain.
  """

  def __init__(self, *fns: tp.Callable[..., tp.Any]):
    self.layers = _layers_container(fns)

  def __call__(self, *args, rngs=None, **kwargs):
    """Runs the chain.

    Args:
      *args: positional arguments of the first layer.
      rngs: passed as ``rngs=`` to every layer that accepts it.
      **kwargs: keyword arguments of the first layer.

    Returns:
      The output of the last layer. An empty chain is the identity: it
      returns its one positional argument, the tuple of several, else the
      dict of keyword arguments (None without any).
    """
    if not self.layers:
      if args:
        return args[0] if len(args) == 1 else args
      return kwargs or None
    output: tp.Any = None
    for i, f in enumerate(self.layers):
      if not callable(f):
        raise TypeError(f'Sequence[{i}] is not callable: {f}')
      if i > 0:
        if isinstance(output, tuple):
          args, kwargs = output, {}
        elif isinstance(output, dict):
          args, kwargs = (), output
        else:
          args, kwargs = (output,), {}
      if rngs is not None and _accepts_rngs(f):
        kwargs = {**kwargs, 'rngs': rngs}
      output = f(*args, **kwargs)
    return output
