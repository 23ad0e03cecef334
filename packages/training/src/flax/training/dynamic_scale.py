"""Dynamic loss scaling for training in half precision.

>>> import jax.numpy as jnp
>>> from flax.training.dynamic_scale import DynamicScale
>>> ds = DynamicScale()
>>> grad_fn = ds.value_and_grad(lambda w: jnp.sum(w ** 2))
>>> ds, is_finite, loss, grad = grad_fn(jnp.ones(2))
>>> bool(is_finite), float(loss), grad
(True, 2.0, Array([2., 2.], dtype=float32))
"""

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from flax import struct

Array = jax.Array

__all__ = ['DynamicScale', 'DynamicScaleResult']


class DynamicScaleResult(NamedTuple):
  """What a function made by ``DynamicScale.value_and_grad`` returns.

  Attributes:
    dynamic_scale: the state to use for the next step.
    finite: whether every gradient element is finite.
    aux: the unscaled loss, or ``(loss, aux)`` when ``has_aux`` is set.
    grad: the unscaled gradients, in float32.
  """

  dynamic_scale: 'DynamicScale'
  finite: Array
  aux: Any
  grad: Any


def _all_finite(tree) -> Array:
  """Returns a boolean scalar: is every element of every leaf finite?"""
  verdicts = (jnp.isfinite(leaf).all() for leaf in jax.tree.leaves(tree))
  return functools.reduce(jnp.logical_and, verdicts, jnp.array(True))


class DynamicScale(struct.PyTreeNode):
  """Scales the loss up before differentiating, and the gradients down.

  If the gradients are not finite, the scale shrinks by ``backoff_factor``
  (but stays at least ``minimum_scale``); after ``growth_interval`` finite
  steps in a row it grows by ``growth_factor``. Skip the update when
  ``is_finite`` is False, e.g. with ``jnp.where``.

  Attributes:
    growth_factor: factor applied after ``growth_interval`` finite steps.
    backoff_factor: factor applied after a non-finite step.
    growth_interval: finite steps needed before growing.
    fin_steps: finite steps since the last change.
    scale: the current scale.
    minimum_scale: the scale never goes below this (None: no minimum).
  """

  growth_factor: float = struct.field(pytree_node=False, default=2.0)
  backoff_factor: float = struct.field(pytree_node=False, default=0.5)
  growth_interval: int = struct.field(pytree_node=False, default=2000)
  fin_steps: Any = 0
  scale: Any = 65536.0
  minimum_scale: float | None = struct.field(
    pytree_node=False, default=jnp.finfo(jnp.float32).tiny
  )

  def _next(self, finite: Array) -> 'DynamicScale':
    """Returns the state after a step whose gradients were ``finite``."""
    at_interval = self.fin_steps == self.growth_interval
    ceiling = jnp.finfo(jnp.float32).max
    grown = jnp.minimum(self.scale * self.growth_factor, ceiling)
    shrunk = self.scale * self.backoff_factor
    if self.minimum_scale is not None:
      shrunk = jnp.maximum(shrunk, self.minimum_scale)
    return self.replace(
      fin_steps=jnp.where(finite & ~at_interval, self.fin_steps + 1, 0),
      scale=jnp.where(
        finite, jnp.where(at_interval, grown, self.scale), shrunk
      ),
    )

  def value_and_grad(self, fun, argnums=0, has_aux=False, axis_name=None):
    """Like ``jax.value_and_grad``, with loss scaling.

    Args:
      fun: the loss function.
      argnums: the arguments to differentiate.
      has_aux: whether ``fun`` returns ``(loss, aux)``.
      axis_name: if given, gradients are averaged over this pmapped axis.

    Returns:
      A function returning a ``DynamicScaleResult``
      ``(dynamic_scale, finite, aux, grad)``, where ``aux`` holds ``loss``
      or ``(loss, aux)``.
    """

    @functools.wraps(fun)
    def scaled_loss(*args):
      out = fun(*args)
      loss, extra = (out[0], out[1]) if has_aux else (out, None)
      return self.scale * loss, extra

    differentiate = jax.value_and_grad(scaled_loss, argnums, has_aux=True)

    def step(*args):
      (scaled, extra), scaled_grad = differentiate(*args)
      loss = scaled / self.scale
      grad = jax.tree.map(
        lambda g: jnp.asarray(g, jnp.float32) / self.scale, scaled_grad
      )
      if axis_name is not None:
        grad = lax.pmean(grad, axis_name)
      finite = _all_finite(grad)
      return DynamicScaleResult(
        self._next(finite), finite, (loss, extra) if has_aux else loss, grad
      )

    return step
