"""Walks over a graph: every node and Variable (``iter_graph``), the
children of a node, and objects reachable through several paths
(``find_duplicates``), with the tree-mode (``graph=False``) check.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> class M(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.ones(1))
>>> [path for path, _ in nnx.iter_graph(M())]
[('w',), ()]
"""

from flax.nnx import filterlib
from flax.nnx._common import graph_mode_default
import typing as tp

import jax

from flax.nnx.flattenlib import _key_of, _sorted_items, is_array_leaf
from flax.nnx.graphnodes import GRAPH_NODE_TYPES, get_child
from flax.nnx import pytreelib
from flax.nnx.pytreelib import Pytree, _sort_key, data_names
from flax.nnx.variablelib import Variable


def tree_mode_options(fn_name: str) -> str:
  """How to get past a tree-mode (``graph=False``) error of ``fn_name``."""
  return (
    'Consider the following options:\n\n'
    '1. Remove the duplicates and guarantee a tree structure.\n'
    f'2. Enable graph mode by passing graph=True to {fn_name} e.g.\n\n'
    f'  nnx.{fn_name}(..., graph=True)\n\n'
    f'3. Use nnx.compat.{fn_name} instead e.g.\n\n'
    f'  nnx.compat.{fn_name}(...)'
  )


def _duplicates_message(node, fn_name) -> str:
  groups = find_duplicates(node)
  lines = []
  for paths in groups:
    obj = node
    for key in paths[0]:
      obj = get_child(obj, key)
    where = '\n'.join('  - ' + _slash_path(p) for p in paths)
    lines.append(f'Duplicate {obj!r}\nfound at paths:\n\n{where}')
  return (
    '\n\n'.join(lines) + '\n\nTree mode (graph=False) does not support '
    'shared references. ' + tree_mode_options(fn_name)
  )


def _child_items(x):
  """The ``(key, child)`` pairs the graph walks descend into: the
  attributes of a Pytree, the children of a registered graph node type or
  of a list, tuple or dict; None for anything else (a leaf)."""
  if isinstance(x, Pytree):
    return _sorted_items(vars(x))
  impl = GRAPH_NODE_TYPES.get(type(x))
  if impl is not None:
    return impl.flatten(x)[0]
  if type(x) in (list, tuple):
    return enumerate(x)
  if type(x) is dict:
    return _sorted_items(x)
  return None


def check_tree(node, fn_name: str, *, keystr: bool = False) -> None:
  """Tree-mode (``graph=False``) checks of ``node`` for ``fn_name``: no
  reference cycles and no Pytree declared with ``pytree=False`` (which JAX
  cannot flatten); a ValueError otherwise. Paths are written as JAX key
  paths (``.a[0]['k']``) with ``keystr``, else as ``a/0/k``."""
  seen: dict = {}  # id -> path, for the nodes on the current branch

  def where(path):
    if keystr:
      return ''.join(
        f'.{k}' if kind == 'attr' else f'[{k!r}]' for k, kind in path
      )
    return '/'.join(str(k) for k, _ in path)

  def walk(x, path):
    if isinstance(x, Pytree):
      if not type(x)._pytree__is_pytree:
        raise _not_a_pytree_error(x, fn_name, where(path) if path else None)
      kind = 'attr'
    elif type(x) in (list, tuple):
      kind = 'index'
    else:
      kind = 'key'
    items = _child_items(x)
    if items is None:
      return
    if id(x) in seen:
      raise ValueError(
        f'Cycle detected for {type(x).__name__}\nfound at paths:\n\n'
        f'  - {where(seen[id(x)])}\n  - {where(path)}\n\nCycles are not '
        'supported with graph=False. ' + tree_mode_options(fn_name)
      )
    seen[id(x)] = path
    for k, v in items:
      walk(v, path + ((k, kind),))
    del seen[id(x)]

  walk(node, ())


def _not_a_pytree_error(x, fn_name, path) -> ValueError:
  found = f' Found at path: {path}.' if path is not None else ''
  return ValueError(
    f"Cannot use '{fn_name}' with graph=False on a '{type(x).__name__}' "
    f'instance that has pytree=False.{found} Pytree subclasses with '
    'pytree=False are not registered as JAX pytrees and cannot be used in '
    'tree-mode. ' + tree_mode_options(fn_name)
  )


def _slash_path(path) -> str:
  return '/'.join(str(k) for k in path)


def _path_str(path) -> str:
  return ''.join(f'[{k}]' if isinstance(k, int) else f'.{k}' for k in path)


def iter_graph(node, /, *, graph=None):
  """Yields ``(path, value)`` for every value reachable from ``node``:
  graph nodes, Variables, containers and their leaves (static values
  too), children before their parent, keys sorted, each object once. With
  ``graph=False`` (tree mode) shared references are a ValueError."""
  if graph is None:
    graph = graph_mode_default()
  if not graph:
    check_tree(node, 'iter_graph')
    if find_duplicates(node):
      raise ValueError(_duplicates_message(node, 'iter_graph'))
  seen = set()

  def walk(x, path):
    # Graph nodes, Variables and pytree nodes (containers, None) are
    # visited once each; plain leaves at every path.
    if isinstance(x, Pytree):
      items = _sorted_items(vars(x))
    elif isinstance(x, Variable):
      items = ()
    elif type(x) in GRAPH_NODE_TYPES:
      items = GRAPH_NODE_TYPES[type(x)].flatten(x)[0]
    elif is_array_leaf(x):
      items = None
    elif type(x) in (list, tuple):
      items = enumerate(x)
    elif type(x) is dict:
      items = _sorted_items(x)
    elif x is None:
      items = ()
    elif not jax.tree_util.all_leaves([x]):
      children, _ = jax.tree_util.tree_flatten_with_path(
        x, is_leaf=lambda y: y is not x
      )
      items = [(_key_of(p[0]), c) for p, c in children]
    else:
      items = None
    if items is not None:
      if id(x) in seen:
        return
      seen.add(id(x))
      for k, v in items:
        yield from walk(v, path + (k,))
    yield path, x

  yield from walk(node, ())


def iter_children(node, /, *, graph=None):
  """Yields ``(key, child)`` for the direct children of ``node`` that are
  graph nodes (Modules and other Pytrees, Variables), keys sorted;
  ``node`` may also be a list, tuple or dict. With ``graph=False`` only
  the data attributes of a Pytree are looked at (as JAX sees it); shared
  children are yielded under each key, as in Flax 0.12.8."""
  if graph is None:
    graph = graph_mode_default()
  if isinstance(node, Pytree):
    d = vars(node)
    if not graph:
      # (only the node itself is checked: its children are not walked)
      if not type(node)._pytree__is_pytree:
        raise _not_a_pytree_error(node, 'iter_children', None)
      d = {k: d[k] for k in data_names(node)}
    items = sorted(d.items(), key=lambda kv: _sort_key(kv[0]))
  elif isinstance(node, dict):
    items = sorted(node.items(), key=lambda kv: _sort_key(kv[0]))
  elif isinstance(node, (list, tuple)):
    items = enumerate(node)
  else:
    raise ValueError(
      f'iter_children expects a graph node (a Module, Pytree, list, tuple '
      f'or dict), got {type(node).__name__}.'
    )
  for key, value in items:
    if isinstance(value, (Pytree, Variable)):
      yield key, value


def iter_module_children(
  node, /, *, graph: bool | None = None
) -> tp.Iterator[tuple[tp.Any, tp.Any]]:
  """:func:`iter_children` without the Variables: the direct children that
  are Modules or other Pytrees."""
  for key, value in iter_children(node, graph=graph):
    if isinstance(value, Pytree):
      yield key, value


def find_duplicates(node, /, *, only=...) -> list:
  """The paths of every object (graph node or Variable) matching ``only``
  that is reachable through more than one path, one list per object.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.a = nnx.Param(jnp.zeros(1))
  ...     self.b = self.a
  >>> nnx.find_duplicates(M())
  [[('a',), ('b',)]]
  """
  predicate = filterlib.to_predicate(only)
  seen: dict = {}

  def walk(x, path):
    if isinstance(x, (Variable, Pytree)) or type(x) in GRAPH_NODE_TYPES:
      paths = seen.get(id(x))
      if paths is not None:
        paths[1].append(path)
        return
      seen[id(x)] = (x, [path])
      if isinstance(x, Variable):
        return
    items = _child_items(x)
    if items is None:
      return
    for k, v in items:
      walk(v, path + (k,))

  walk(node, ())
  return [
    paths
    for obj, paths in seen.values()
    if len(paths) > 1 and predicate(paths[0], obj)
  ]


pytreelib.register_graph_traversal(iter_graph)
