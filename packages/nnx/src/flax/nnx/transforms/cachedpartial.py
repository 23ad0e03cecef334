"""``nnx.cached_partial``: a graph-mode transform with its first arguments
bound to copies of graph nodes.

The copies are taken once, when the partial is made: new graph nodes
sharing the Variables of the originals (as ``nnx.merge(*nnx.split(x))``
builds them), so every call passes the same objects and the graph
traversals of the transform find them unchanged. Changing their structure
between calls is allowed; changing it inside the transform is an error.

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> class Scale(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.full((3,), 2.0))
>>> @nnx.jit
... def step(model, x):
...   return x * model.w
>>> f = nnx.compat.cached_partial(step, Scale())
>>> f(jnp.ones(3))
Array([2., 2., 2.], dtype=float32)
"""

import dataclasses
import functools

from flax.nnx import graphlib
from flax.nnx.pytreelib import Pytree
from flax.nnx.transforms.general import graph_with_updates


@dataclasses.dataclass(frozen=True)
class _Snapshot:
  """What a bound copy is made of before a call: its flat view, graphdef
  and leaves (the view is the same object while nothing in it was set)."""

  view: object
  graphdef: object
  leaves: tuple

  @classmethod
  def of(cls, node) -> '_Snapshot':
    view = graphlib.flat_view(node)
    return cls(view, view.graphdef, tuple(view.leaves))

  def unchanged(self, node) -> bool:
    view = graphlib.flat_view(node)
    if view is self.view:
      return True
    return (
      view.graphdef == self.graphdef
      and len(view.leaves) == len(self.leaves)
      and all(a is b for a, b in zip(view.leaves, self.leaves))
    )


def cached_partial(f, *cached_args, graph=None, graph_updates=None):
  """``f`` with its first arguments bound to copies of ``cached_args``.

  The copies share the Variables of ``cached_args`` and are the same
  objects on every call (a transform returning one returns that copy).
  ``f`` must not change their graph structure (``ValueError``). It is a
  graph-mode API: ``graph=False`` or ``graph_updates=False`` raise a
  ``ValueError``.
  """
  if not graph_with_updates(graph, graph_updates):
    raise ValueError(
      'cached_partial is a graph-mode-only API and requires '
      'graph_updates=True (use nnx.jit_partial for tree mode or '
      'graph_updates=False).'
    )
  copies = graphlib.merge(*graphlib.split(cached_args, graph=True))
  nodes = [c for c in copies if isinstance(c, Pytree)]

  @functools.wraps(f)
  def cached(*args, **kwargs):
    before = [_Snapshot.of(node) for node in nodes]
    out = f(*copies, *args, **kwargs)
    for node, snapshot in zip(nodes, before):
      if not snapshot.unchanged(node):
        raise ValueError(
          'The graph structure of a node added to cached_partial was '
          'mutated inside the transformation, this is not allowed.\n'
          f'Node: {node}'
        )
    return out

  return cached
