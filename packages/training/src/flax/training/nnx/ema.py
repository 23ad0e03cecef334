"""``nnx.EMA``: an exponential moving average of a model's Variables.

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> model = nnx.Linear(1, 1, use_bias=False, rngs=nnx.Rngs(0))
>>> model.kernel[...] = jnp.zeros((1, 1))
>>> ema = nnx.EMA(model, decay=0.9)
>>> model.kernel[...] = jnp.ones((1, 1))
>>> ema.update(model)
>>> round(float(ema.params['kernel'][...][0, 0]), 4)
0.1
"""

from __future__ import annotations

import typing as tp

import jax

from flax import nnx
from flax.nnx import filterlib
from flax.training.nnx._common import check_graph
from flax.training.nnx._common import filtered_state

__all__ = ['EMA']

A = tp.TypeVar('A')
_GraphMode = bool | None


def _is_variable(x) -> bool:
  return isinstance(x, nnx.Variable)


def _value(x):
  return x.get_value() if _is_variable(x) else x


class EMA(nnx.Pytree):
  """Exponential moving average of the Variables of a model.

  It keeps a copy of the Variables of ``params`` that match ``only``;
  each :meth:`update` moves them towards new values:
  ``average = decay * average + (1 - decay) * new``. :meth:`apply_to`
  returns a model that evaluates with the averages (it shares the EMA's
  Variables, so it follows later updates), e.g. for evaluation.
  EMA is a Pytree, so it can be passed through ``nnx.jit``.

  Args:
    params: a model (graph node) or a State with the initial values.
    decay: the weight of the running average in each update.
    only: a filter of the Variables to average (default: all).
    graph: graph mode (``True``), tree mode (``False``, shared Variables
      are an error) or the current default (``None``).

  Attributes:
    decay: the decay.
    filter: the ``only`` filter.
    params: a State holding the averages.
  """

  def __init__(
    self,
    params: tp.Any,
    decay: float,
    *,
    only: filterlib.Filter = ...,
    graph: _GraphMode = None,
  ):
    self.graph = check_graph(graph)
    self.decay, self.filter = decay, only
    state = filtered_state(params, only, self.graph)
    self.params = nnx.data(
      jax.tree.map(lambda v: v.copy(), state, is_leaf=_is_variable)
    )

  def update(self, updates: tp.Any) -> None:
    """Moves the averages towards the Variables of ``updates``.

    Args:
      updates: a model or a State with the same Variables (under the
        ``only`` filter) as the one the EMA was created from.
    """
    new = filtered_state(updates, self.filter, self.graph)
    decay = self.decay

    def step(average, value):
      average.set_value(
        decay * average.get_value() + (1.0 - decay) * _value(value)
      )

    jax.tree.map(step, self.params, new, is_leaf=_is_variable)

  def apply_to(self, model: A) -> A:
    """Returns a model like ``model`` that evaluates with the averages.

    The new model's averaged Variables are the EMA's own (``self.params``),
    so it follows every later :meth:`update`, eagerly or under
    ``nnx.jit``; its other Variables (e.g. ``BatchStat``) are ``model``'s.
    Its graph nodes are new: ``model`` itself is left unchanged.

    Args:
      model: a model with the structure of the one the EMA was made from.

    Returns:
      The model built from ``model``'s structure, the EMA's Variables and
      ``model``'s remaining Variables.

    Raises:
      ValueError: if the EMA holds Variables at paths ``model`` lacks.
    """
    graphdef, state = nnx.split(model, graph=self.graph)
    return nnx.merge(graphdef, nnx.merge_state(state, self.params))
