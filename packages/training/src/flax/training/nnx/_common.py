"""Helpers shared by the NNX optimizer and EMA."""

from __future__ import annotations

from flax import nnx


def check_graph(graph) -> bool | None:
  """Validates a ``graph`` argument (``True``, ``False`` or ``None``)."""
  if graph is not None and not isinstance(graph, bool):
    raise TypeError(f'`graph` must be a bool or None, got {graph!r}')
  return graph


def _path_str(path) -> str:
  return ''.join(f'[{k}]' if isinstance(k, int) else f'.{k}' for k in path)


def filtered_state(node, wrt, graph: bool | None):
  """The Variables of ``node`` (a graph node or a State) matching ``wrt``.

  In tree mode (``graph=False``, or ``None`` with tree mode the default) a
  Variable reachable through two paths is an error.
  """
  if isinstance(node, nnx.State):
    return node.filter(wrt)
  if graph is None:
    graph = nnx.graph_mode()
  if not graph:
    duplicates = nnx.find_duplicates(node)
    if duplicates:
      lines = '\n'.join(
        '  - ' + ' and '.join(map(_path_str, dup)) for dup in duplicates
      )
      raise ValueError(
        'Duplicate references found at paths:\n\n'
        f'{lines}\n\nTree mode (graph=False) does not support shared '
        'references: remove the duplicates or pass graph=True.'
      )
  return nnx.state(node, wrt)
