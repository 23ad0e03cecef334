"""Prefix trees and leaf extraction for pytree-only (tree-mode) code
(re-exported by :mod:`flax.nnx.extract`).

A *prefix* of a pytree has the tree's structure down to some depth; each of
its leaves applies to the whole subtree at that place (``in_axes`` of
``jax.vmap`` are prefixes). ``None`` in a prefix is an empty subtree, as in
``jax.tree``, unless ``prefix_leaf`` says otherwise.

>>> from flax.nnx import extract
>>> extract.broadcast_prefix_map(
...   lambda path, axis, x: (axis, x), (0, 1), ([10, 20], 30)
... )
([(0, 10), (0, 20)], (1, 30))
"""

from flax.nnx.graphlib import is_graph_node
import abc
import collections
import dataclasses
import functools
import inspect
import typing as tp

import jax

from flax.nnx.variablelib import Variable

KeyPath = tuple


class PrefixMapping(abc.ABC):
  """A prefix leaf that resolves to a different prefix per Variable:
  ``map_prefix(path, variable)`` is the prefix of the Variable at ``path``
  (a JAX key path) below it.

  >>> from flax import nnx
  >>> from flax.nnx import extract
  >>> import jax.numpy as jnp
  >>> class ByType(extract.PrefixMapping):
  ...   def map_prefix(self, path, variable, /):
  ...     return 0 if isinstance(variable, nnx.Param) else None
  >>> ByType().map_prefix((), nnx.Param(jnp.ones(1)))
  0
  """

  @abc.abstractmethod
  def map_prefix(self, path: tuple, variable: Variable, /) -> tp.Any:
    """The prefix of ``variable`` found at ``path``."""


def broadcast_prefix2(
  prefix_tree: tp.Any,
  full_tree: tp.Any,
  is_leaf: tp.Callable[[tp.Any], bool] | None = None,
  prefix_leaf: tp.Callable[[tp.Any], bool] | None = None,
) -> tuple[list, list]:
  """For every leaf of ``full_tree`` (``is_leaf`` stops the flattening),
  the key path of the prefix leaf covering it and that prefix leaf.

  >>> from flax.nnx import extract
  >>> extract.broadcast_prefix2({'a': 1}, {'a': {'x': 1, 'y': 2}})
  ([(DictKey(key='a'),), (DictKey(key='a'),)], [1, 1])
  """
  paths: list = []
  values: list = []

  def add(path, prefix, subtree):
    n = len(jax.tree_util.tree_leaves(subtree, is_leaf=is_leaf))
    paths.extend([path] * n)
    values.extend([prefix] * n)

  jax.tree_util.tree_map_with_path(
    add, prefix_tree, full_tree, is_leaf=prefix_leaf
  )
  return paths, values


_LeafTest = tp.Callable[[tp.Any], bool] | None


def broadcast_prefix_map(
  f: tp.Callable[..., tp.Any],
  prefix_tree: tp.Any,
  full_tree: tp.Any,
  *rest: tp.Any,
  is_leaf: _LeafTest = None,
  prefix_leaf: _LeafTest = None,
) -> tp.Any:
  """A tree like ``full_tree`` whose leaves are ``f(path, prefix, leaf,
  *rest_leaves)``: ``path`` is the leaf's key path, ``prefix`` the prefix
  leaf covering it, ``rest`` trees of the same structure."""
  _, prefixes = broadcast_prefix2(prefix_tree, full_tree, is_leaf, prefix_leaf)
  leaves, treedef = jax.tree_util.tree_flatten_with_path(
    full_tree, is_leaf=is_leaf
  )
  rests = [treedef.flatten_up_to(r) for r in rest]
  out = [
    f(path, prefix, x, *(r[i] for r in rests))
    for i, ((path, x), prefix) in enumerate(zip(leaves, prefixes))
  ]
  return treedef.unflatten(out)


@dataclasses.dataclass(frozen=True)
class ExtractIndex:
  """Stands for the value extracted at position ``index`` (see
  :func:`extract`)."""

  index: int


def extract(
  f: tp.Callable[[tuple, tp.Any, tp.Any], bool],
  prefix: tp.Any,
  tree: tp.Any,
  *,
  is_leaf: tp.Callable[[tp.Any], bool] | None = None,
  prefix_leaf: tp.Callable[[tp.Any], bool] | None = None,
) -> tuple[tp.Any, list]:
  """Takes out the leaves of ``tree`` for which ``f(path, prefix, leaf)``
  is true: returns the tree with an :class:`ExtractIndex` in their place
  and the list of the leaves taken (see :func:`insert`).

  >>> from flax.nnx import extract
  >>> tree, taken = extract.extract(
  ...   lambda path, prefix, x: prefix == 1, (0, 1), ([1, 2], 3)
  ... )
  >>> tree, taken
  (([1, 2], ExtractIndex(index=0)), [3])
  >>> extract.insert(tree, taken)
  ([1, 2], 3)
  """
  taken: list = []

  def take(path, p, x):
    if f(path, p, x):
      taken.append(x)
      return ExtractIndex(len(taken) - 1)
    return x

  out = broadcast_prefix_map(
    take, prefix, tree, is_leaf=is_leaf, prefix_leaf=prefix_leaf
  )
  return out, taken


def insert(tree: tp.Any, extracted: list) -> tp.Any:
  """Puts the values taken by :func:`extract` back in ``tree``."""
  return jax.tree_util.tree_map(
    lambda x: extracted[x.index] if isinstance(x, ExtractIndex) else x,
    tree,
    is_leaf=lambda x: isinstance(x, ExtractIndex),
  )


def labeled(**kwargs):
  """The keyword arguments as a named tuple (``LabeledTuple``), so that
  their key paths read ``.name``.

  >>> from flax.nnx import extract
  >>> extract.labeled(a=1, b=2)
  LabeledTuple(a=1, b=2)
  """
  cls = _LABELED.get(tuple(kwargs))
  if cls is None:
    cls = _LABELED[tuple(kwargs)] = collections.namedtuple(
      'LabeledTuple', list(kwargs)
    )
  return cls(**kwargs)


_LABELED: dict = {}


def filter_kwargs(f, **kwargs):
  """The keyword arguments ``f`` accepts (all of them if it takes
  ``**kwargs``).

  >>> from flax.nnx import extract
  >>> def f(a, *, b=0):
  ...   pass
  >>> extract.filter_kwargs(f, a=1, b=2, c=3)
  {'a': 1, 'b': 2}
  """
  params = inspect.signature(f).parameters.values()
  if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
    return dict(kwargs)
  names = {
    p.name
    for p in params
    if p.kind
    in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
  }
  return {k: v for k, v in kwargs.items() if k in names}


def _is_variable(x) -> bool:
  return isinstance(x, Variable)


def copy_var_structure(tree):
  """A new tree with the structure of ``tree`` (new containers and graph
  nodes, as JAX pytrees) holding the same Variables and leaves.

  >>> from flax import nnx
  >>> from flax.nnx import extract
  >>> import jax.numpy as jnp
  >>> p = nnx.Param(jnp.ones(1))
  >>> tree = [p, 3]
  >>> new = extract.copy_var_structure(tree)
  >>> new is tree, new[0] is p
  (False, True)
  """
  return jax.tree_util.tree_map(lambda x: x, tree, is_leaf=_is_variable)


def treemap_copy_args(f):
  """Wraps ``f`` so that it gets copies of the structure of its arguments
  (:func:`copy_var_structure`): it may change containers in place without
  touching the caller's."""

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    args, kwargs = copy_var_structure((args, kwargs))
    return f(*args, **kwargs)

  return wrapper


def clear_non_graph_nodes(tree):
  """``tree`` with every leaf that is not a graph node (Module, Variable,
  ...) replaced by None."""

  return jax.tree_util.tree_map(
    lambda x: x if is_graph_node(x) else None, tree, is_leaf=is_graph_node
  )
