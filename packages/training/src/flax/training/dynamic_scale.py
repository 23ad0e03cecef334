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
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from flax import struct

__all__ = ['DynamicScale']


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
    pytree_node=False, default=float(jnp.finfo(jnp.float32).tiny)
  )

  def value_and_grad(self, fun, argnums=0, has_aux=False, axis_name=None):
    """Like ``jax.value_and_grad``, with loss scaling.

    Args:
      fun: the loss function.
      argnums: the arguments to differentiate.
      has_aux: whether ``fun`` returns ``(loss, aux)``.
      axis_name: if given, gradients are averaged over this pmapped axis.

    Returns:
      A function returning ``(new_dynamic_scale, is_finite, value, grad)``,
      where ``value`` is ``loss`` or ``(loss, aux)``.
    """

    @functools.wraps(fun)
    def scaled_fun(*args):
      out = fun(*args)
      if has_aux:
        return self.scale * out[0], out[1]
      return self.scale * out

    grad_fn = jax.value_and_grad(scaled_fun, argnums, has_aux)

    def wrapper(*args):
      value, grad = grad_fn(*args)
      if has_aux:
        value = (value[0] / self.scale, value[1])
      else:
        value = value / self.scale
      grad = jax.tree.map(
        lambda g: jnp.asarray(g, jnp.float32) / self.scale, grad
      )
      if axis_name is not None:
        grad = lax.pmean(grad, axis_name)
      finite = jnp.array(True)
      for g in jax.tree.leaves(grad):
        finite &= jnp.all(lax.is_finite(g))
      grow = self.fin_steps == self.growth_interval
      fin_scale = jnp.where(
        grow & finite,
        jnp.minimum(
          self.scale * self.growth_factor, jnp.finfo(jnp.float32).max
        ),
        self.scale,
      )
      inf_scale = self.scale * self.backoff_factor
      if self.minimum_scale is not None:
        inf_scale = jnp.maximum(inf_scale, self.minimum_scale)
      new_scale = jnp.where(finite, fin_scale, inf_scale)
      new_fin_steps = jnp.where(grow | ~finite, 0, self.fin_steps + 1)
      new_self = self.replace(fin_steps=new_fin_steps, scale=new_scale)
      return new_self, finite, value, grad

    return wrapper
