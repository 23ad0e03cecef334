"""``flax.nnx.graph``: the graph API (split, merge, GraphDef, contexts...)
under its public module path; the objects are those of
:mod:`flax.nnx.graphlib`.

>>> from flax.nnx import graph, graphlib
>>> graph.GraphDef is graphlib.GraphDef
True
"""

from flax.nnx import graphlib as _graphlib


def __getattr__(name):
  if name.startswith('__'):
    raise AttributeError(name)
  try:
    value = getattr(_graphlib, name)
  except AttributeError:
    raise AttributeError(
      f'module {__name__!r} has no attribute {name!r}'
    ) from None
  if name != 'map':
    globals()[name] = value
  return value


def __dir__():
  return sorted(n for n in dir(_graphlib) if not n.startswith('_'))
