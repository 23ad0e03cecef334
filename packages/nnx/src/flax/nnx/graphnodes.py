"""What the graph traversal treats as nodes and leaves, the per-type node
implementations (how to list, set and remove a node's children), and the
small marker records of graph definitions.

>>> from flax import nnx
>>> from flax.nnx import graphlib
>>> graphlib.is_node_leaf(nnx.Param(1)), graphlib.is_pytree_node([1])
(True, True)
>>> sorted(graphlib.get_node_impl({'b': 1, 'a': 2}).node_dict({'b': 1, 'a': 2}))
['a', 'b']
"""

import builtins
import dataclasses
import typing as tp

import jax
import numpy as np

from flax.nnx import reprlib
from flax.nnx.pytreelib import Pytree, PytreeRecord
from flax.nnx.variablelib import Variable
from flax.typing import HashableMapping

Node = tp.TypeVar('Node')


# -- predicates -------------------------------------------------------------------


def is_node_leaf(x) -> bool:
  """Whether ``x`` is a leaf of the graph: a Variable or an array."""
  return isinstance(x, (Variable, jax.Array, np.ndarray))


def is_node_type(x) -> bool:
  """Whether instances of type ``x`` are graph or pytree nodes."""
  if not isinstance(x, type):
    return False
  if issubclass(x, Pytree):
    return True
  if issubclass(x, Variable):
    return False
  return x in _PYTREE_TYPES or x in _REGISTERED


def is_pytree_node(x, *, check_graph_registry: bool = True) -> bool:
  """Whether ``x`` is a JAX pytree with children (not a graph node, not
  a leaf).

  Args:
    x: any value.
    check_graph_registry: whether graph nodes (Pytrees, Variables) are
      excluded.
  """
  if check_graph_registry and isinstance(x, (Pytree, Variable)):
    return False
  if isinstance(x, (Variable, jax.Array, np.ndarray)):
    return False
  return not jax.tree_util.all_leaves([x])


def is_node_module(x) -> bool:
  """Whether ``x`` is an NNX Pytree (Module, container, ...)."""
  return isinstance(x, Pytree)


def jax_to_nnx_path(jax_path: tuple, /) -> tuple:
  """Turns a JAX key path into an NNX path of plain keys.

  >>> import jax
  >>> from flax.nnx import graphlib
  >>> path = jax.tree_util.tree_flatten_with_path({'a': [0, 1]})[0][1][0]
  >>> graphlib.jax_to_nnx_path(path)
  ('a', 1)
  """
  out = []
  for entry in jax_path:
    for attr in ('key', 'idx', 'name'):
      if hasattr(entry, attr):
        out.append(getattr(entry, attr))
        break
    else:
      raise ValueError(f'Unsupported JAX path entry: {entry!r}')
  return tuple(out)


class GenericPytree:
  """The node type recorded for plain JAX pytrees (lists, dicts, tuples and
  registered pytree classes) met in a graph."""


# -- node implementations ------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class NodeImplBase(tp.Generic[Node]):
  """How to list the children of nodes of ``type``: ``flatten(node)``
  returns ``(key/child pairs, aux data)``."""

  type: type
  flatten: tp.Callable

  def node_dict(self, node) -> dict:
    """The ``{key: child}`` of ``node``."""
    items, _ = self.flatten(node)
    return dict(items)


@dataclasses.dataclass(frozen=True, slots=True)
class GraphNodeImpl(NodeImplBase[Node]):
  """A mutable graph node type: children can be set and removed in place."""

  set_key: tp.Callable
  pop_key: tp.Callable
  create_empty: tp.Callable
  clear: tp.Callable
  init: tp.Callable


@dataclasses.dataclass(frozen=True, slots=True)
class PytreeNodeImpl(NodeImplBase[Node]):
  """An immutable pytree node type, rebuilt with ``unflatten``."""

  unflatten: tp.Callable
  set_key: tp.Callable | None
  pop_key: tp.Callable | None


def _pytree_obj_flatten(node):
  items = sorted(vars(node).items(), key=lambda kv: str(kv[0]))
  return items, (type(node), frozenset(node._pytree__m.data))


def _pytree_obj_create_empty(aux):
  cls, data = aux
  obj = object.__new__(cls)
  object.__setattr__(obj, '_pytree__m', PytreeRecord(data))
  return obj


def _pytree_obj_pop_key(node, key):
  value = getattr(node, key)
  delattr(node, key)
  return value


def _pytree_obj_clear(node):
  for key in list(vars(node)):
    delattr(node, key)


def _pytree_obj_init(node, items):
  vars(node).update(items)


_GRAPH_IMPL = GraphNodeImpl(
  type=Pytree,
  flatten=_pytree_obj_flatten,
  set_key=setattr,
  pop_key=_pytree_obj_pop_key,
  create_empty=_pytree_obj_create_empty,
  clear=_pytree_obj_clear,
  init=_pytree_obj_init,
)


def _jax_flatten(node):
  children, treedef = jax.tree_util.tree_flatten_with_path(
    node, is_leaf=lambda y: y is not node
  )
  return [(jax_to_nnx_path(p)[0], c) for p, c in children], treedef


def _jax_unflatten(items, treedef):
  return treedef.unflatten([c for _, c in items])


class IndexesPytreeDef(tp.NamedTuple):
  """Where the leaves of a pytree sit: ``key_index`` maps keys to leaf
  positions under ``treedef``. A tuple, hence a pytree of its two fields.

  >>> import jax
  >>> from flax.nnx import graph
  >>> d = graph.IndexesPytreeDef(
  ...   graph.HashableMapping({'a': 0, 'b': 1}),
  ...   jax.tree.structure({'a': 1, 'b': 2}),
  ... )
  >>> d.key_index['b'], d.treedef.num_leaves
  (1, 2)
  """

  key_index: tp.Any
  treedef: tp.Any


def _flatten_pytree(pytree) -> tuple[list, IndexesPytreeDef]:
  """The children of the pytree node ``pytree`` (one level) as ``(key,
  child)`` pairs, and an :class:`IndexesPytreeDef` to rebuild it with
  :func:`_unflatten_pytree`.

  >>> from flax.nnx import graphlib
  >>> graphlib._flatten_pytree({'b': 1, 'a': [2]})[0]
  [('a', [2]), ('b', 1)]
  """
  children, treedef = jax.tree_util.tree_flatten_with_path(
    pytree, is_leaf=lambda y: y is not pytree
  )
  # (a leaf has no children: its empty path has no first key)
  items = [(jax_to_nnx_path(path)[0], child) for path, child in children]
  key_index = HashableMapping({key: i for i, (key, _) in enumerate(items)})
  return items, IndexesPytreeDef(key_index, treedef)


def _unflatten_pytree(items, indexes: IndexesPytreeDef):
  """The pytree of ``(key, child)`` pairs ``items`` (in any order),
  placed by the ``key_index`` of ``indexes`` (from :func:`_flatten_pytree`).
  """
  key_index = indexes.key_index
  ordered = sorted(items, key=lambda item: key_index[item[0]])
  return indexes.treedef.unflatten([child for _, child in ordered])


PYTREE_NODE_IMPL = PytreeNodeImpl(
  type=type(None),
  flatten=_jax_flatten,
  unflatten=_jax_unflatten,
  set_key=None,
  pop_key=None,
)

_PYTREE_TYPES = (list, tuple, dict)
_REGISTERED: dict = {}


def get_node_impl_for_type(x: type):
  """The node implementation of type ``x`` (None for leaf types)."""
  if issubclass(x, Pytree):
    return _GRAPH_IMPL
  impl = _REGISTERED.get(x)
  if impl is not None:
    return impl
  if x in _PYTREE_TYPES:
    return PYTREE_NODE_IMPL
  return None


def get_node_impl(x):
  """The node implementation of ``x`` (None for leaves and Variables)."""
  if isinstance(x, Variable):
    return None
  impl = get_node_impl_for_type(type(x))
  if impl is None and is_pytree_node(x):
    return PYTREE_NODE_IMPL
  return impl


def register_pytree_node_type(
  type: type,
  flatten,
  unflatten,
  *,
  set_key=None,
  pop_key=None,
):
  """Registers ``type`` as a pytree node: ``flatten(node)`` returns
  ``(key/child pairs, aux)`` and ``unflatten(pairs, aux)`` rebuilds it.
  The type becomes a JAX pytree too, so NNX graphs traverse its children.
  """

  def jax_flatten_with_keys(node):
    items, aux = flatten(node)
    keys = tuple(k for k, _ in items)
    children = tuple((jax.tree_util.DictKey(k), c) for k, c in items)
    return children, (keys, aux)

  def jax_unflatten(meta, children):
    keys, aux = meta
    return unflatten(list(zip(keys, children)), aux)

  jax.tree_util.register_pytree_with_keys(
    type, jax_flatten_with_keys, jax_unflatten
  )
  _REGISTERED[type] = PytreeNodeImpl(
    type=type,
    flatten=flatten,
    unflatten=unflatten,
    set_key=set_key,
    pop_key=pop_key,
  )


# Graph node types registered with ``register_graph_node_type``: type ->
# GraphNodeImpl. The traversal (flattenlib), the rebuild (rebuildlib) and
# the path helpers below read it.
GRAPH_NODE_TYPES: dict = {}


_IMPL_FIELDS = dataclasses.fields(GraphNodeImpl)


def register_graph_node_type(
  type: type,
  flatten,
  set_key,
  pop_key,
  create_empty,
  clear,
  init,
) -> None:
  """Registers ``type`` as a mutable graph node (like a Module): NNX
  functions and transforms traverse its children, keep its identity
  (shared references) and rebuild it with the given callbacks.

  Args:
    type: the class to register.
    flatten: ``flatten(node) -> (key/child pairs, aux)``; ``aux`` is
      hashable static data kept in the GraphDef.
    set_key: ``set_key(node, key, child)`` sets one child.
    pop_key: ``pop_key(node, key) -> child`` removes one child.
    create_empty: ``create_empty(aux) -> node`` makes an empty node.
    clear: ``clear(node)`` removes every child.
    init: ``init(node, pairs)`` adds the key/child pairs to an empty node.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class Box:
  ...   def __init__(self, **items):
  ...     self.items = items
  >>> nnx.graph.register_graph_node_type(
  ...   Box,
  ...   flatten=lambda b: (sorted(b.items.items()), None),
  ...   set_key=lambda b, k, v: b.items.__setitem__(k, v),
  ...   pop_key=lambda b, k: b.items.pop(k),
  ...   create_empty=lambda aux: Box(),
  ...   clear=lambda b: b.items.clear(),
  ...   init=lambda b, pairs: b.items.update(pairs),
  ... )
  >>> box = Box(w=nnx.Param(jnp.ones(2)), n=3)
  >>> graphdef, state = nnx.split(box)
  >>> list(state.keys())
  ['w']
  >>> new = nnx.merge(graphdef, state)
  >>> type(new).__name__, new.items['n'], new.items['w'] is box.items['w']
  ('Box', 3, True)
  """
  callbacks = locals()
  if not isinstance(type, builtins.type):
    raise TypeError(f'register_graph_node_type expects a class, got {type!r}.')
  if issubclass(type, (Pytree, Variable)):
    raise ValueError(
      f'{type.__name__} is already a graph node type (a Pytree or Variable '
      'subclass); it cannot be registered again.'
    )
  # Every argument is a field of the same name.
  impl = GraphNodeImpl(**{f.name: callbacks[f.name] for f in _IMPL_FIELDS})
  GRAPH_NODE_TYPES[type] = _REGISTERED[type] = impl


def get_child(node, key):
  """The child ``key`` of a graph node, registered node or container."""
  if isinstance(node, Pytree):
    return getattr(node, key)
  impl = GRAPH_NODE_TYPES.get(type(node))
  if impl is not None:
    return dict(impl.flatten(node)[0])[key]
  return node[key]


def set_child(node, key, value) -> None:
  """Sets the child ``key`` of a graph node, registered node or container."""
  if isinstance(node, Pytree):
    setattr(node, key, value)
    return
  impl = GRAPH_NODE_TYPES.get(type(node))
  if impl is not None:
    impl.set_key(node, key, value)
  else:
    node[key] = value


def del_child(node, key) -> None:
  """Removes the child ``key`` of a graph node, registered node or
  container."""
  if isinstance(node, Pytree):
    delattr(node, key)
    return
  impl = GRAPH_NODE_TYPES.get(type(node))
  if impl is not None:
    impl.pop_key(node, key)
  else:
    del node[key]


# -- markers ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, repr=False)
class Static(tp.Generic[Node]):
  """A static value held in a graph definition."""

  value: tp.Any

  def __repr__(self):
    return f'Static(value={self.value!r})'


@dataclasses.dataclass(frozen=True, repr=False)
class NodeRef(tp.Generic[Node]):
  """A reference to the object of index ``index`` met before."""

  index: int

  def __repr__(self):
    return f'NodeRef(\n  index={self.index}\n)'


@dataclasses.dataclass(frozen=True)
class DataElem:
  """A data (traced) element of a container."""

  value: tp.Any


@dataclasses.dataclass(frozen=True)
class StaticElem:
  """A static element of a container."""

  value: tp.Any


class _Marker:
  __slots__ = ()

  def __repr__(self):
    return f'{type(self).__name__}()'

  def __eq__(self, other):
    return type(other) is type(self)

  def __hash__(self):
    return hash(type(self))


class NodeAttr(_Marker):
  """Marks an attribute holding a graph node."""


class LeafAttr(_Marker):
  """Marks an attribute holding a leaf."""


class Repeated(_Marker):
  """Marks an object seen before."""


class NoUpdate(_Marker):
  """Marks a value left unchanged."""


NODE_ATTR = NodeAttr()
LEAF_ATTR = LeafAttr()
REPEATED = Repeated()
NO_UPDATE = NoUpdate()


# -- typed records of a GraphDef ---------------------------------------------


class _OuterIndexMixin:
  """``with_*_outer_index`` helpers of the records that carry an index."""

  __slots__ = ()

  def with_no_outer_index(self):
    return dataclasses.replace(self, outer_index=None)

  def with_same_outer_index(self):
    return dataclasses.replace(self, outer_index=self.index)

  def with_matching_outer_index(self, other):
    return dataclasses.replace(self, outer_index=other.outer_index)


@dataclasses.dataclass(frozen=True, slots=True)
class NodeDef(_OuterIndexMixin, tp.Generic[Node]):
  """A graph node of a GraphDef: its type, index (None for plain
  pytrees), outer index, number of attributes and metadata."""

  type: type
  index: int | None
  outer_index: int | None
  num_attributes: int
  metadata: tp.Any


@dataclasses.dataclass(frozen=True, slots=True)
class ArrayRefDef(_OuterIndexMixin):
  """An array reference (``jax.Ref``) held by a Variable."""

  index: int
  outer_index: int | None


@dataclasses.dataclass(frozen=True, slots=True)
class VariableDef(_OuterIndexMixin, tp.Generic[Node]):
  """A Variable of a GraphDef: its type, index, outer index and
  metadata."""

  type: type
  index: int
  outer_index: int | None
  metadata: tp.Any
  array_refdef: tp.Any

  def __repr__(self):
    items = ''.join(
      f'\n    {k!r}: {v!r},' for k, v in dict(self.metadata).items()
    )
    meta = f'{{{items[:-1]}\n  }}' if items else '{}'
    return (
      f'VariableDef(\n  type={self.type.__name__!r},\n  index={self.index},'
      f'\n  outer_index={self.outer_index!r},\n'
      f'  metadata=PrettyMapping({meta})\n)'
    )


@dataclasses.dataclass(frozen=True, slots=True)
class TreeNodeDef(tp.Generic[Node]):
  """A plain pytree (tree mode): its type, treedef and leaf paths."""

  type: type
  treedef: tp.Any
  path_index: tuple

  def with_no_outer_index(self):
    return self

  def with_same_outer_index(self):
    return self

  def with_matching_outer_index(self, other):
    return self


@dataclasses.dataclass(frozen=True, repr=False)
class ArrayRefOutput(reprlib.Representable):
  """The value of an array reference (``jax.Ref``) made inside an update
  context's function, in the state of its inner split: the outer merge
  puts a new ``jax.Ref`` of it in place (a Ref cannot leave a JAX trace).

  A Ref the function was given comes out as :class:`NoUpdate` instead: the
  outer merge keeps the original.
  """

  value: tp.Any

  def __nnx_repr__(self):
    yield reprlib.Object(type=type(self))
    yield reprlib.Attr('value', self.value)


# Both markers are JAX pytrees: NoUpdate without leaves, ArrayRefOutput
# with its value as the one leaf.
jax.tree_util.register_pytree_node(
  NoUpdate, lambda x: ((), x), lambda aux, _: aux
)
jax.tree_util.register_pytree_node(
  ArrayRefOutput,
  lambda x: ((x.value,), ()),
  lambda _, children: ArrayRefOutput(children[0]),
)
