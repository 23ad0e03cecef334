"""``nnx.Optimizer``: an Optax optimizer whose state lives in Variables.

>>> import jax, jax.numpy as jnp, optax
>>> from flax import nnx
>>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
>>> optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
>>> grads = nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(model)
>>> _ = optimizer.update(model, grads)
>>> int(optimizer.step[...])
1
"""

from __future__ import annotations

import typing as tp

import jax
import jax.numpy as jnp
import optax

from flax import nnx
from flax.nnx import filterlib
from flax.nnx import Param as Param
from flax.nnx import Pytree as Pytree
from flax.nnx import Variable as Variable
from flax.typing import MISSING as MISSING
from flax.training.nnx._common import check_graph
from flax.training.nnx._common import filtered_state

__all__ = [
  'ModelAndOptimizer',
  'OptArray',
  'OptState',
  'OptVariable',
  'Optimizer',
  'to_opt_state',
]

M = tp.TypeVar('M')
F = tp.TypeVar('F', bound=tp.Callable[..., tp.Any])


class OptState(Variable):
  """A Variable holding optimizer state (the step counter, moments...)."""


class OptArray(OptState):
  """Optimizer state that is a plain array (e.g. Adam's ``count``)."""


class OptVariable(OptState):
  """Optimizer state mirroring a model Variable (e.g. Adam's ``mu``).

  It keeps the metadata of the Variable it mirrors, such as its sharding.
  """


def _is_variable(x) -> bool:
  return isinstance(x, Variable)


def _opt_metadata(metadata: dict[str, tp.Any]) -> dict[str, tp.Any]:
  """The metadata of the optimizer state mirroring a Variable.

  A Variable's ``optimizer_sharding`` (``None`` included) becomes the
  state's ``out_sharding``, replacing the Variable's own, so the state is
  sharded that way when it is created; without it the state keeps the
  Variable's ``out_sharding``. ``out_sharding`` comes last, as in Flax
  0.12.8's metadata order.
  """
  metadata = dict(metadata)
  if 'optimizer_sharding' in metadata:
    metadata.pop('out_sharding', None)
    metadata['out_sharding'] = metadata.pop('optimizer_sharding')
  elif 'out_sharding' in metadata:
    metadata['out_sharding'] = metadata.pop('out_sharding')
  return metadata


def to_opt_state(tree):
  """Wraps every leaf of an Optax state in an :class:`OptState` Variable.

  Leaves that are Variables (state mirroring the parameters) become
  :class:`OptVariable` with the same metadata, sharded like the Variable
  or by its ``optimizer_sharding`` metadata when it has one; arrays
  become :class:`OptArray`.

  >>> import jax.numpy as jnp
  >>> from flax import nnx
  >>> from flax.nnx.training.optimizer import to_opt_state
  >>> state = to_opt_state({'count': jnp.zeros(()), 'mu': nnx.Param(jnp.ones(2))})
  >>> type(state['count']).__name__, type(state['mu']).__name__
  ('OptArray', 'OptVariable')
  """

  def wrap(x):
    if _is_variable(x):
      return OptVariable(x.get_value(), **_opt_metadata(x.get_metadata()))
    return OptArray(x)

  return jax.tree.map(wrap, tree, is_leaf=_is_variable)


def _pure(tree):
  # Same containers (State, tuples, optax records), Variables -> values.
  return jax.tree.map(
    lambda x: x.get_value() if _is_variable(x) else x,
    tree,
    is_leaf=_is_variable,
  )


class Optimizer(Pytree, tp.Generic[M]):
  """Keeps an Optax optimizer's state and a step counter for a model.

  The state covers the model's Variables that match ``wrt``;
  ``update(model, grads)`` applies one step to them in place. The Optimizer
  is a Pytree, so it goes through ``nnx.jit``, ``nnx.scan`` and
  ``nnx.split`` like a Module.

  >>> import jax.numpy as jnp, optax
  >>> from flax import nnx
  >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
  >>> optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
  >>> type(optimizer.opt_state[0].mu['kernel']).__name__
  'OptVariable'

  Args:
    model: the model whose Variables are optimized.
    tx: an Optax gradient transformation.
    wrt: a filter of the Variables to optimize (e.g. ``nnx.Param``).
    graph: ``True`` to collect the Variables in graph mode (shared
      Variables are optimized once), ``False`` for tree mode (shared
      Variables raise an error), ``None`` for the current default
      (:func:`flax.nnx.graph_mode`).

  Attributes:
    step: an ``OptState`` counting the updates (uint32).
    tx: the transformation.
    opt_state: the transformation's state, leaves wrapped in ``OptState``.
    wrt: the filter.
  """

  def __init__(
    self,
    model: M,
    tx: optax.GradientTransformation,
    *,
    wrt: filterlib.Filter = MISSING,  # type: ignore[assignment]
    graph: bool | None = None,
  ):
    if wrt is MISSING:
      raise TypeError(
        'Missing required argument `wrt`. As of Flax 0.11.0 the `wrt` '
        'argument is required; to keep the previous behaviour use '
        'nnx.ModelAndOptimizer instead of nnx.Optimizer.'
      )
    self.graph = check_graph(graph)
    self.step = OptState(jnp.array(0, dtype=jnp.uint32))
    self.tx = tx
    self.opt_state = nnx.data(
      to_opt_state(tx.init(filtered_state(model, wrt, self.graph)))
    )
    self.wrt = wrt

  def update(self, model: M, grads, /, **kwargs) -> optax.Updates:
    """Applies one optimizer step to ``model``'s Variables.

    Args:
      model: the model (the same graph as at construction).
      grads: gradients for the Variables matching ``wrt`` (e.g. from
        ``nnx.grad``), as a State, a nested dict, or a graph node such as
        the model copy that tree-mode ``nnx.grad`` returns.
      **kwargs: extra arguments for ``tx.update`` (e.g. ``value`` for
        ``optax.contrib`` optimizers).

    Returns:
      The updates that were added to the parameters.
    """
    params = _pure(filtered_state(model, self.wrt, self.graph))
    if isinstance(grads, nnx.GraphState):
      # Gradients of an ``nnx.unpack`` GraphState: its State.
      grads = grads.state
    if isinstance(grads, (Pytree, Variable)):
      # Gradients as a graph node (tree-mode ``nnx.grad`` returns a copy
      # of the model): its Variables matching ``wrt``.
      grads = nnx.state(grads, self.wrt)
    elif isinstance(grads, nnx.State):
      # Gradients of more Variables than ``wrt`` covers (every Param, with
      # ``wrt=nnx.LoRAParam``): only those being optimized. A State of
      # plain arrays (no Variable types to match) is taken as it is.
      matching = grads.filter(self.wrt)
      if jax.tree.leaves(matching):
        grads = matching
    opt_vars = jax.tree.leaves(self.opt_state, is_leaf=_is_variable)
    updates, new_opt_state = self.tx.update(
      _pure(grads), _pure(self.opt_state), params, **_pure(kwargs)
    )
    nnx.update(model, optax.apply_updates(params, updates))
    for var, value in zip(opt_vars, jax.tree.leaves(new_opt_state)):
      var.set_value(value)
    self.step.set_value(self.step.get_value() + 1)
    return updates


class ModelAndOptimizer(Optimizer[M]):
  """An ``Optimizer`` that also holds its model: ``update(grads)``.

  >>> import jax.numpy as jnp, optax
  >>> from flax import nnx
  >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
  >>> state = nnx.ModelAndOptimizer(model, optax.sgd(0.1))
  >>> grads = nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(state.model)
  >>> state.update(grads)
  >>> int(state.step[...])
  1

  Args:
    model: the model, kept as ``self.model``.
    tx: an Optax gradient transformation.
    wrt: the Variables to optimize (default ``nnx.Param``).
  """

  def __init__(
    self,
    model: M,
    tx: optax.GradientTransformation,
    *,
    wrt: filterlib.Filter = Param,
  ):
    super().__init__(model, tx, wrt=wrt)
    self.model = model

  def update(self, grads, /, **kwargs):  # type: ignore[override]
    """Applies one optimizer step to ``self.model``."""
    super().update(self.model, grads, **kwargs)
