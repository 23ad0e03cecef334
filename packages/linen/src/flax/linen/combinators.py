"""Combinators of Modules: ``Sequential``."""

from collections.abc import Mapping, Sequence
from typing import Any, Callable

from flax.linen.module import Module, compact


class Sequential(Module):
  """Applies callables one after the other.

  The output of each layer is the input of the next: a tuple is unpacked as
  positional arguments, a dict as keyword arguments. Layers may be Modules
  or plain functions such as ``nn.relu``. Modules created outside a Module
  are adopted and named ``layers_<index>``.

  >>> import jax, jax.numpy as jnp
  >>> from flax import linen as nn
  >>> class AddOne(nn.Module):
  ...   def __call__(self, x):
  ...     return x + 1
  >>> model = nn.Sequential([AddOne(), lambda x: 2 * x])
  >>> model.apply({}, jnp.zeros(2))
  Array([2., 2.], dtype=float32)

  Attributes:
    layers: the callables to apply.
  """

  layers: Sequence[Callable[..., Any]]

  def __post_init__(self):
    kind = type(self.layers)
    if not issubclass(kind, Sequence):
      raise ValueError(f"'layers' must be a sequence, got '{kind.__name__}'.")
    super().__post_init__()

  @compact
  def __call__(self, *args, **kwargs):
    layers = self.layers
    if len(layers) == 0:
      raise ValueError(f'Empty Sequential module {self.name}.')
    # The first layer takes the call's arguments; each later one is fed
    # the previous output (see ``_feed``).
    value = layers[0](*args, **kwargs)
    for layer in layers[1:]:
      value = _feed(layer, value)
    return value


def _feed(layer, value):
  """Calls ``layer`` on the previous output: a tuple is spread as positional
  arguments, a mapping as keyword arguments; anything else is the one
  argument."""
  if isinstance(value, tuple):
    return layer(*value)
  if isinstance(value, Mapping):
    return layer(**value)
  return layer(value)
