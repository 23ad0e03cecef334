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

__all__ = ['OVERWRITE_WITH_GRADIENT', 'TrainState']

# A top-level key of ``params``/``grads``: the values under it are not
# trained but replaced by the matching "gradients" (e.g. fp8 scales); the
# trained parameters then sit under ``'params'``.
OVERWRITE_WITH_GRADIENT = '_overwrite_with_gradient'


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

    When ``grads`` has an ``OVERWRITE_WITH_GRADIENT`` entry, only
    ``params['params']`` is trained and the new ``params`` is
    ``{'params': ..., OVERWRITE_WITH_GRADIENT: grads[OVERWRITE_WITH_GRADIENT]}``.

    Args:
      grads: gradients with the structure of ``params``.
      **kwargs: other fields of the state to replace.

    Returns:
      The updated state.
    """
    overwrite = OVERWRITE_WITH_GRADIENT in grads
    trained = _trained(self.params, overwrite)
    updates, opt_state = self.tx.update(
      _trained(grads, overwrite), self.opt_state, trained
    )
    params = optax.apply_updates(trained, updates)
    if overwrite:
      params = {
        'params': params,
        OVERWRITE_WITH_GRADIENT: grads[OVERWRITE_WITH_GRADIENT],
      }
    return self.replace(
      **kwargs, step=self.step + 1, params=params, opt_state=opt_state
    )

  @classmethod
  def create(cls, *, apply_fn, params, tx, **kwargs):
    """Creates a state at step 0 with ``opt_state = tx.init(params)``.

    With an ``OVERWRITE_WITH_GRADIENT`` entry in ``params``, ``tx`` sees
    only ``params['params']``.

    Args:
      apply_fn: the apply function, usually ``model.apply``.
      params: the parameters.
      tx: the Optax transformation.
      **kwargs: values of the fields that subclasses add.
    """
    opt_state = tx.init(_trained(params, OVERWRITE_WITH_GRADIENT in params))
    fields = dict(apply_fn=apply_fn, params=params, tx=tx, opt_state=opt_state)
    return cls(step=0, **fields, **kwargs)


def _trained(tree, overwrite):
  """The part of ``tree`` (params or grads) that ``tx`` works on: its
  ``'params'`` entry when an ``OVERWRITE_WITH_GRADIENT`` entry rides along
  (``overwrite``), else the whole tree."""
  return tree['params'] if overwrite else tree
