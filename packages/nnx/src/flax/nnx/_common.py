"""Small shared pieces of flax.nnx: sentinels, graph-mode switch, epochs."""

import contextlib
import threading

# The "argument not given" sentinel is flax.typing's, so that
# ``flax.typing.MISSING`` means "not given" to NNX functions too.
from flax.typing import MISSING as MISSING
from flax.typing import Missing as Missing


class GraphNodeBase:
  """Common base of Pytree and Variable (the objects NNX treats as graph
  nodes). ``GraphNodeBase.__instancecheck__`` is a C-level predicate, cheap
  to pass as ``is_leaf`` to ``jax.tree_util`` functions."""

  __slots__ = ()


is_graph_node_leaf = GraphNodeBase.__instancecheck__


_TRACE_STATE = []


def trace_state():
  """An opaque token of the current JAX trace level (compared with ``==``)."""
  if not _TRACE_STATE:
    from jax.extend.core import get_opaque_trace_state

    _TRACE_STATE.append(get_opaque_trace_state)
  return _TRACE_STATE[0]()


def trace_context_error(what: str):
  """The TraceContextError for mutating ``what`` from another trace level."""
  from flax import errors

  return errors.TraceContextError(
    f'Cannot mutate {what} from a different trace level: it was created '
    'outside of the JAX transform being traced (e.g. captured by a function '
    'passed to jax.jit or jax.lax.scan). Use the NNX transforms (nnx.jit, '
    'nnx.grad, nnx.scan, ...), which carry NNX objects across the '
    'transform, or pass the object as an argument.'
  )


class _Context(threading.local):
  def __init__(self):
    self.graph_mode = []


_CONTEXT = _Context()


def graph_mode_default() -> bool:
  """The graph mode used when a function gets ``graph=None``."""
  stack = _CONTEXT.graph_mode
  if stack:
    return stack[-1]
  import flax

  return bool(flax.config.flax_graph_mode)


def resolve_graph(graph) -> bool:
  if graph is None:
    return graph_mode_default()
  return bool(graph)


@contextlib.contextmanager
def _graph_mode_ctx(value: bool):
  _CONTEXT.graph_mode.append(value)
  try:
    yield
  finally:
    _CONTEXT.graph_mode.pop()


class set_graph_mode:  # noqa: N801 - used as a function and context manager
  """Sets the default of the ``graph`` argument of NNX functions.

  Used as a function it changes the default for this thread; used as a
  context manager the change lasts until the ``with`` block ends.

  >>> from flax import nnx
  >>> with nnx.set_graph_mode(False):
  ...   nnx.graph_mode()
  False
  """

  def __init__(self, value: bool):
    self._value = bool(value)
    self._previous = list(_CONTEXT.graph_mode)
    _CONTEXT.graph_mode.append(self._value)

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    _CONTEXT.graph_mode[:] = self._previous
    return False


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
