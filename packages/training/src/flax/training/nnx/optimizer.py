"""``nnx.Optimizer``: an Optax optimizer whose state lives in Variables.

>>> import jax, jax.numpy as jnp, optax
>>> from flax import nnx
>>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
>>> optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
>>> grads = nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(model)
>>> optimizer.update(model, grads)
>>> int(optimizer.step.value)
1
"""

import typing as tp

import jax
import jax.numpy as jnp
import optax

from flax import nnx

__all__ = [
  'ModelAndOptimizer',
  'OptArray',
  'OptState',
  'OptVariable',
  'Optimizer',
  'to_opt_state',
]

M = tp.TypeVar('M')


class OptState(nnx.Variable):
  """A Variable holding optimizer state."""


class OptArray(OptState):
  """Optimizer state that is an array."""


class OptVariable(OptState):
  """Optimizer state that mirrors a Variable of the model."""


def _is_variable(x) -> bool:
  return isinstance(x, nnx.Variable)


def _value(v):
  return v.get_value() if hasattr(v, 'get_value') else v.value


def _set_value(v, value):
  if hasattr(v, 'set_value'):
    v.set_value(value)
  else:
    v.value = value


def to_opt_state(tree):
  """Wraps every leaf of an Optax state in an ``OptState`` Variable."""

  def wrap(x):
    if _is_variable(x):
      return OptVariable(_value(x), source_type=type(x))
    return OptArray(x)

  return jax.tree.map(wrap, tree, is_leaf=_is_variable)


def _arrays(tree):
  """The tree with every Variable replaced by its value.

  ``nnx.State`` containers become nested dicts, so the optimizer state is
  made of plain containers that every graph traversal sees into.
  """
  if isinstance(tree, nnx.State):
    return tree.to_pure_dict()
  return jax.tree.map(
    lambda x: (
      _arrays(x)
      if isinstance(x, nnx.State)
      else (_value(x) if _is_variable(x) else x)
    ),
    tree,
    is_leaf=lambda x: _is_variable(x) or isinstance(x, nnx.State),
  )


class Optimizer(nnx.Pytree, tp.Generic[M]):
  """Keeps an Optax optimizer's state and a step counter for a model.

  The state covers the model's Variables that match ``wrt``;
  ``update(model, grads)`` applies one step to them in place.

  Args:
    model: the model whose Variables are optimized.
    tx: an Optax gradient transformation.
    wrt: a filter of the Variables to optimize (e.g. ``nnx.Param``).

  Attributes:
    step: an ``OptState`` counting the updates (uint32).
    tx: the transformation.
    opt_state: the transformation's state, leaves wrapped in ``OptState``.
    wrt: the filter.
  """

  def __init__(self, model: M, tx: optax.GradientTransformation, *, wrt=None):
    if wrt is None:
      raise TypeError(
        'Missing required argument `wrt`. As of Flax 0.11.0 the `wrt` '
        'argument is required; to keep the previous behaviour use '
        'nnx.ModelAndOptimizer instead of nnx.Optimizer.'
      )
    self.step = OptState(jnp.array(0, dtype=jnp.uint32))
    self.tx = tx
    params = _arrays(nnx.state(model, wrt))
    self.opt_state = nnx.data(to_opt_state(tx.init(params)))
    self.wrt = wrt

  def update(self, model: M, grads, /, **kwargs):
    """Applies one optimizer step to ``model``'s Variables.

    Args:
      model: the model (the same graph as at construction).
      grads: gradients for the Variables matching ``wrt`` (e.g. from
        ``nnx.grad``), as a State or nested dict.
      **kwargs: extra arguments for ``tx.update`` (e.g. ``value`` for
        ``optax.contrib`` optimizers).
    """
    params = _arrays(nnx.state(model, self.wrt))
    grads = _arrays(grads)
    opt_vars = jax.tree.leaves(self.opt_state, is_leaf=_is_variable)
    opt_state = _arrays(self.opt_state)
    kwargs = _arrays(kwargs)
    updates, new_opt_state = self.tx.update(grads, opt_state, params, **kwargs)
    new_params = optax.apply_updates(params, updates)
    nnx.update(model, new_params)
    for var, value in zip(opt_vars, jax.tree.leaves(new_opt_state)):
      _set_value(var, value)
    _set_value(self.step, _value(self.step) + 1)


class ModelAndOptimizer(Optimizer[M]):
  """An ``Optimizer`` that also holds its model: ``update(grads)``.

  Args:
    model: the model, kept as ``self.model``.
    tx: an Optax gradient transformation.
    wrt: the Variables to optimize (default ``nnx.Param``).
  """

  def __init__(self, model: M, tx: optax.GradientTransformation, *, wrt=None):
    super().__init__(model, tx, wrt=nnx.Param if wrt is None else wrt)
    self.model = model

  def update(self, grads, /, **kwargs):  # type: ignore[override]
    """Applies one optimizer step to ``self.model``."""
    return super().update(self.model, grads, **kwargs)
