"""Tree mode (``graph=False``) of the graph API: a node is a JAX pytree
whose leaves are its Variables and every other pytree leaf (arrays,
numbers, strings), with no shared references.

Its GraphDef root is a ``('t', type, treedef, path_index, variables)``
record: ``treedef`` is the JAX treedef of the node with Variables as
leaves, ``path_index`` pairs every leaf path (in sorted path order, the
order of the State) with the leaf's position in ``treedef``, and
``variables`` holds ``(position in that order, type, metadata)`` of every
Variable leaf, so that plain values can be wrapped again on merge.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> graphdef, state = nnx.split(
...   {'p': nnx.Param(jnp.ones(2)), 'n': 3}, graph=False
... )
>>> [type(n).__name__ for n in graphdef.nodes]
['TreeNodeDef', 'VariableDef']
>>> state['n'], nnx.merge(graphdef, state)['n']
(3, 3)
"""

from flax.nnx.statelib import node_state
from flax.nnx import filterlib
from flax.nnx.variablelib import _HIJAX_CLASSES
from flax.nnx._hijax_graph import traced_variable_def
import jax

from flax.nnx.variablelib import HijaxVariable, hijax_class
from flax.nnx.flattenlib import _EMPTY_META, _Meta
from flax.nnx.graphnodes import jax_to_nnx_path
from flax.nnx.graphwalk import check_tree, tree_mode_options
from flax.nnx.pytreelib import Pytree
from flax.nnx.variablelib import Variable, store_raw_value
from flax.nnx._variable_tree import record_trace

_is_variable = Variable.__instancecheck__
_flatten_with_path = jax.tree_util.tree_flatten_with_path


class TreeParts:
  """One tree-mode flattening of a node.

  Attributes:
    node: the GraphDef root record (``('t', ...)``).
    paths: the leaf paths, sorted.
    leaves: the leaves (Variables as they are), in the order of ``paths``
      (shared by every user of a cached flattening: copy before handing
      it out).
    graphdef: the GraphDef of ``node``, made on first use.
  """

  __slots__ = ('node', 'paths', 'leaves', 'graphdef')

  def __init__(self, node, paths, leaves):
    self.node = node
    self.paths = paths
    self.leaves = leaves
    self.graphdef = None


def _sort_order(paths) -> list:
  """Positions of ``paths`` in sorted order (ints before strings when a
  level mixes both)."""
  n = len(paths)
  try:
    return sorted(range(n), key=paths.__getitem__)
  except TypeError:
    return sorted(
      range(n),
      key=lambda i: tuple(
        (0, k, '') if isinstance(k, int) else (1, 0, str(k)) for k in paths[i]
      ),
    )


def _keystr(jax_path) -> str:
  return jax.tree_util.keystr(jax_path) or '(root)'


def _duplicate_error(first, again, leaf) -> ValueError:
  return ValueError(
    f'Duplicate {leaf!r}\nfound at paths:\n\n  - {_keystr(first)}\n  - '
    f'{_keystr(again)}\n\nTree mode (graph=False) does not support shared '
    'references. ' + tree_mode_options('split')
  )


def _watched(treedef) -> bool:
  """Whether every pytree node of ``treedef`` is one whose children a
  flat view tracks: a Pytree, a list, dict or tuple (namedtuples too),
  None, or a frozen dataclass."""
  data = treedef.node_data()
  if data is None:
    return True
  cls = data[0]
  if not (
    cls in (list, dict, type(None))
    or issubclass(cls, (Pytree, tuple))
    or getattr(getattr(cls, '__dataclass_params__', None), 'frozen', False)
  ):
    return False
  return all(map(_watched, treedef.children()))


def _flatten(node) -> TreeParts:
  check_tree(node, 'flatten', keystr=True)
  kv, treedef = _flatten_with_path(node, is_leaf=_is_variable)
  leaves = [v for _, v in kv]
  seen: dict = {}
  for i, leaf in enumerate(leaves):
    if isinstance(leaf, (Variable, jax.Ref)):
      j = seen.setdefault(id(leaf), i)
      if j != i:
        raise _duplicate_error(kv[j][0], kv[i][0], leaf)
  paths = [jax_to_nnx_path(p) for p, _ in kv]
  order = _sort_order(paths)
  leaves = [leaves[i] for i in order]
  var_records = []
  for k, v in enumerate(leaves):
    if isinstance(v, Variable):
      if isinstance(v, jax.core.Tracer):
        # a traced hijax Variable: recorded as the hijax Variable it traces

        cls, meta = traced_variable_def(v)
      else:
        cls, meta = type(v), v._var_metadata
        if cls is HijaxVariable:  # recorded as the class of its type
          cls = hijax_class(v.var_type)
      var_records.append((k, cls, _Meta(meta) if meta else _EMPTY_META))
  record = (
    't',
    type(node),
    treedef,
    tuple((paths[i], i) for i in order),
    tuple(var_records),
  )
  return TreeParts(record, [paths[i] for i in order], leaves)


def tree_paths(record) -> list:
  """The leaf paths of a tree-mode GraphDef root, sorted."""
  return [path for path, _ in record[3]]


def is_leaf_root(record) -> bool:
  """Whether the tree-mode root is itself the one leaf (an array, a
  number, a Variable)."""
  return len(record[3]) == 1 and record[3][0][0] == ()


def tree_unflatten(record, leaves, *, raw: bool = False):
  """Rebuilds the node of a tree-mode GraphDef root from its leaves (in
  sorted path order).

  Args:
    record: the ``('t', ...)`` root record.
    leaves: the leaves, in the order of the State.
    raw: whether every leaf is a raw value.

  A Variable position given a plain value (or any value, with ``raw``)
  gets a new Variable of the recorded type and metadata: the GraphDef of a
  tree records which leaves are Variables, so they are always recreated.
  Other positions take their leaf as it is.
  """
  _, _, treedef, path_index, var_records = record
  if var_records:
    # (imported here: the hijax module needs variablelib fully loaded)

    leaves = list(leaves)
  for k, cls, meta in var_records:
    leaf = leaves[k]
    if raw or not isinstance(leaf, Variable):
      if cls in _HIJAX_CLASSES:  # made through its primitive
        var = cls.from_metadata(leaf, dict(meta.items))
      else:
        var = object.__new__(cls)
        store_raw_value(var, leaf)
        object.__setattr__(var, '_var_metadata', dict(meta.items))
        record_trace(var)
      leaves[k] = var
  ordered = [None] * len(path_index)
  for (_, i), leaf in zip(path_index, leaves):
    ordered[i] = leaf
  return treedef.unflatten(ordered)


def tree_states(parts: TreeParts, filters, *, exhaustive: bool) -> list:
  """The States of a tree-mode flattening, one per filter (one State of
  every leaf without filters). ``exhaustive``: a leaf no filter matches is
  a ValueError (``split``); otherwise it is left out (``state``)."""

  if not filters:
    return [node_state(parts.paths, list(parts.leaves))]
  predicates = filterlib.filters_to_predicates(filters)
  buckets = [([], []) for _ in predicates]
  for path, leaf in zip(parts.paths, parts.leaves):
    for pred, (paths, leaves) in zip(predicates, buckets):
      if pred(path, leaf):
        paths.append(path)
        leaves.append(leaf)
        break
    else:
      if exhaustive:
        raise ValueError(
          'Non-exhaustive filters, got a non-empty remainder: the value at '
          f'path {path!r} is matched by none of {filters!r}; add `...` as '
          'the last filter to collect the rest.'
        )
  return [node_state(paths, leaves) for paths, leaves in buckets]
