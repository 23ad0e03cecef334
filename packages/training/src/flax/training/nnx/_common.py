"""Helpers shared by the NNX optimizer and EMA."""

from __future__ import annotations

from flax import nnx


def check_graph(graph) -> bool | None:
  """Validates a ``graph`` argument (``True``, ``False`` or ``None``)."""
  if graph is not None and not isinstance(graph, bool):
    raise TypeError(f'`graph` must be a bool or None, got {graph!r}')
  return graph


def filtered_state(node, wrt, graph: bool | None):
  """The Variables of ``node`` (a graph node or a State) matching ``wrt``.

  In tree mode (``graph=False``, or ``None`` with tree mode the default) a
  Variable reachable through two paths is an error, as for ``nnx.state``.
  """
  if isinstance(node, nnx.State):
    return node.filter(wrt)
  return nnx.state(node, wrt, graph=graph)
