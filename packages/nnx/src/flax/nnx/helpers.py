"""Helpers: the ``nnx.List``/``nnx.Dict`` containers, ``TrainState`` and
``Sequential`` (provided by flax-layers, resolved on first access).

>>> from flax.nnx import helpers
>>> helpers.has_keyword_arg(lambda x, *, rngs=None: x, 'rngs')
True
"""

from __future__ import annotations

import inspect
import typing as tp

import jax

from flax import plugins, struct
from flax.nnx.containers import Dict as Dict
from flax.nnx.containers import List as List
from flax.nnx.graphlib import GraphDef as GraphDef
from flax.nnx.proxy_caller import ApplyCaller as ApplyCaller
from flax.nnx.module import Module as Module
from flax.nnx.rnglib import Rngs as Rngs
from flax.nnx.statelib import State as State
from flax.nnx.variablelib import Variable as Variable
import jax.numpy as jnp

A = tp.TypeVar('A')
M = tp.TypeVar('M', bound=Module)
TS = tp.TypeVar('TS', bound='TrainState')


class ModuleDefApply(tp.Protocol, tp.Generic[M]):
  """Signature of ``TrainState.apply``."""

  def __call__(
    self, state: State, *states: State
  ) -> ApplyCaller[tuple[State, GraphDef[M]]]: ...


def has_keyword_arg(func: tp.Callable[..., tp.Any], name: str) -> bool:
  """Whether ``func`` takes a keyword argument ``name``."""
  try:
    params = inspect.signature(func).parameters
  except (TypeError, ValueError):
    return False
  param = params.get(name)
  return param is not None and param.kind in (
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    inspect.Parameter.KEYWORD_ONLY,
  )


class TrainState(tp.Generic[M], struct.PyTreeNode):
  """Functional training state of a split Module: graphdef, params, an
  Optax-style optimizer ``tx`` and its state.

  Args:
    graphdef: the GraphDef of the Module (static).
    params: the State being trained.
    opt_state: the optimizer state of ``params``.
    step: the number of steps taken.
    tx: a gradient transformation with ``init``/``update`` (static).
  """

  graphdef: GraphDef[M] = struct.field(pytree_node=False)
  params: State
  opt_state: tp.Any
  step: jax.Array
  tx: tp.Any = struct.field(pytree_node=False)

  @classmethod
  def create(cls, graphdef, *, params, tx, step: int = 0, **kwargs):
    """Builds the state with ``tx.init(params)`` and ``step``."""

    opt_state = tx.init(params)
    fields = dict(graphdef=graphdef, params=params, tx=tx)
    return cls(**fields, opt_state=opt_state, step=jnp.asarray(step), **kwargs)

  def apply(self, state, *states):
    """``graphdef.apply`` with states given as State or attribute names
    (``train_state.apply('params')(x)``)."""
    resolved = [
      getattr(self, s) if isinstance(s, str) else s for s in (state, *states)
    ]
    return self.graphdef.apply(*resolved)

  def apply_gradients(self, grads, **kwargs):
    """One optimizer step: ``tx.update`` then adds the updates."""
    updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
    params = jax.tree.map(_add_update, self.params, updates)
    return self.replace(
      params=params, opt_state=opt_state, step=self.step + 1, **kwargs
    )


def _add_update(param, update):

  return jnp.asarray(param + update).astype(jnp.asarray(param).dtype)


def __getattr__(name):
  # ``helpers.Sequential`` is the one of flax-layers, an optional dependency
  # of flax-nnx, imported on first use.
  if name == 'Sequential':
    try:
      module = plugins.require('flax.layers.nnx.combinators', 'flax-layers')
    except ModuleNotFoundError as e:
      raise AttributeError(f'{__name__}.Sequential: {e}') from e
    return module.Sequential
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
