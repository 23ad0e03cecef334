"""Small shared pieces of flax.nnx: sentinels, graph-mode switch, epochs."""

import threading

from jax._src import core as _jax_core
from jax.extend import core as _jax_extend_core

# The "argument not given" sentinel is flax.typing's, so that
# ``flax.typing.MISSING`` means "not given" to NNX functions too.
from flax.typing import MISSING as MISSING
from flax.typing import BaseConfigContext as BaseConfigContext
from flax.typing import Missing as Missing
from flax import errors
import flax


class GraphNodeBase:
  """Common base of Pytree and Variable (the objects NNX treats as graph
  nodes). ``GraphNodeBase.__instancecheck__`` is a C-level predicate, cheap
  to pass as ``is_leaf`` to ``jax.tree_util`` functions."""

  __slots__ = ()


is_graph_node_leaf = GraphNodeBase.__instancecheck__


_TRACE_CTX = _jax_core.trace_ctx


def _trace_state_token():
  """An opaque token of the current JAX trace level (compared with ``==``).

  Every NNX object records one when it is created (by its constructor, a
  copy, ``jax.tree.unflatten`` or NNX's rebuilding), so this is read often:
  it is the trace's own weak reference (what
  ``jax.extend.core.get_opaque_trace_state`` wraps), not a new object.
  """
  return _TRACE_CTX.trace._weakref


if hasattr(_TRACE_CTX.trace, '_weakref'):
  trace_state = _trace_state_token
else:  # another JAX layout: its public (slower) token
  trace_state = _jax_extend_core.get_opaque_trace_state


def trace_context_error(what: str, *, node: bool = False):
  """The TraceContextError for mutating ``what`` from another trace level
  (``node``: a graph node such as a Module, in Flax's wording for them)."""

  level = 'different trace level' if node else 'a different trace level'
  return errors.TraceContextError(
    f'Cannot mutate {what} from {level}: it was created '
    'outside of the JAX transform being traced (e.g. captured by a function '
    'passed to jax.jit or jax.lax.scan). Use the NNX transforms (nnx.jit, '
    'nnx.grad, nnx.scan, ...), which carry NNX objects across the '
    'transform, or pass the object as an argument.'
  )


class _Context(threading.local):
  def __init__(self):
    self.graph_mode = []
    self.graph_updates = []


_CONTEXT = _Context()


def graph_mode_default() -> bool:
  """The graph mode used when a function gets ``graph=None``."""
  stack = _CONTEXT.graph_mode
  if stack:
    return stack[-1]

  return bool(flax.config.nnx_graph_mode)


def graph_updates_default() -> bool:
  """Whether transforms propagate graph updates when given ``None``."""
  stack = _CONTEXT.graph_updates
  if stack:
    return stack[-1]

  return bool(flax.config.nnx_graph_updates)


def resolve_graph(graph) -> bool:
  if graph is None:
    return graph_mode_default()
  return bool(graph)


class set_graph_mode(BaseConfigContext):  # noqa: N801
  """Sets the default of the ``graph`` argument of NNX functions.

  Called on its own it changes the default for this thread; as a context
  manager (or decorator) the change lasts until the block ends.

  >>> from flax import nnx
  >>> with nnx.set_graph_mode(False):
  ...   nnx.set_graph_mode.current_value()
  False
  >>> nnx.set_graph_mode.current_value()
  True
  """

  @classmethod
  def get_stack(cls) -> list:
    return _CONTEXT.graph_mode

  @classmethod
  def get_default(cls):

    return flax.config.nnx_graph_mode


class set_graph_updates(BaseConfigContext):  # noqa: N801
  """Sets whether NNX transforms propagate graph updates by default (the
  ``graph_updates`` argument when it is ``None``).

  >>> from flax import nnx
  >>> with nnx.set_graph_updates(False):
  ...   nnx.set_graph_updates.current_value()
  False
  """

  @classmethod
  def get_stack(cls) -> list:
    return _CONTEXT.graph_updates

  @classmethod
  def get_default(cls):

    return flax.config.nnx_graph_updates


def graph_mode() -> bool:
  """Returns whether NNX functions default to graph mode."""
  return graph_mode_default()


# Structural epoch: bumped whenever the structure of any graph node changes
# (attribute set or deleted on a Pytree / Module). Cached flat views of graph
# roots stay valid while the epoch is unchanged.
class _Epoch:
  __slots__ = ('value',)

  def __init__(self):
    self.value = 0


EPOCH = _Epoch()
# Bumped when the metadata of any Variable changes (it is part of graphdefs).
META_EPOCH = _Epoch()
