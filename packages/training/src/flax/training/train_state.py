"""``TrainState``: parameters, optimizer state and step in one pytree.

>>> import jax, jax.numpy as jnp, optax
>>> from flax.training import train_state
>>> state = train_state.TrainState.create(
...     apply_fn=lambda p, x: p['w'] * x, params={'w': jnp.ones(2)},
...     tx=optax.sgd(0.5))
>>> grads = {'w': jnp.ones(2)}
>>> state = state.apply_gradients(grads=grads)
>>> state.step, state.params['w']
(1, Array([0.5, 0.5], dtype=float32))
"""

from collections.abc import Callable
from typing import Any

import optax

from flax import struct

__all__ = ['TrainState']


class TrainState(struct.PyTreeNode):
  """A simple train state for the common case of one Optax optimizer.

  Subclass it to carry more fields (e.g. ``batch_stats``); ``create`` and
  ``apply_gradients`` pass extra keyword arguments on to them. ``apply_fn``
  and ``tx`` are static (not pytree leaves), so a ``TrainState`` can be
  passed through ``jax.jit``, ``jax.pmap`` and ``jax.eval_shape``.

  Attributes:
    step: the number of ``apply_gradients`` calls so far.
    apply_fn: usually ``model.apply``; kept for convenience.
    params: the parameters that ``tx`` updates.
    tx: an Optax gradient transformation.
    opt_state: the state of ``tx``.
  """

  step: int | Any
  apply_fn: Callable = struct.field(pytree_node=False)
  params: Any = struct.field(pytree_node=True)
  tx: optax.GradientTransformation = struct.field(pytree_node=False)
  opt_state: optax.OptState = struct.field(pytree_node=True)

  def apply_gradients(self, *, grads, **kwargs):
    """Applies one update of ``tx`` and increments ``step``.

    Args:
      grads: gradients with the structure of ``params``.
      **kwargs: other fields of the state to replace.

    Returns:
      The updated state.
    """
    updates, new_opt_state = self.tx.update(grads, self.opt_state, self.params)
    new_params = optax.apply_updates(self.params, updates)
    return self.replace(
      step=self.step + 1,
      params=new_params,
      opt_state=new_opt_state,
      **kwargs,
    )

  @classmethod
  def create(cls, *, apply_fn, params, tx, **kwargs):
    """Creates a state at step 0 with ``opt_state = tx.init(params)``.

    Args:
      apply_fn: the apply function, usually ``model.apply``.
      params: the parameters.
      tx: the Optax transformation.
      **kwargs: values of the fields that subclasses add.
    """
    opt_state = tx.init(params)
    return cls(
      step=0,
      apply_fn=apply_fn,
      params=params,
      tx=tx,
      opt_state=opt_state,
      **kwargs,
    )
