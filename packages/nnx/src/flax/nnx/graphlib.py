"""The NNX graph: flatten objects into a GraphDef plus their Variables.

Structural work happens once per graph structure: every Pytree root keeps
a cached *flat view* (graphdef, ordered leaves, paths) that stays valid
until an attribute of one of its nodes is set or deleted (or Variable
metadata changes). ``split`` / ``state`` / ``update`` on an unchanged graph
only read or write the leaves.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> class Foo(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.ones(2))
...     self.count = nnx.BatchStat(jnp.array(0))
>>> graphdef, params, rest = nnx.split(Foo(), nnx.Param, ...)
>>> sorted(params.keys()), sorted(rest.keys())
(['w'], ['count'])
>>> foo = nnx.merge(graphdef, params, rest)
>>> foo.w[...].tolist()
[1.0, 1.0]
"""

import importlib

import flax
from flax.nnx.graphcore import GraphDef as GraphDef
from flax.nnx.graphcore import GraphState as GraphState
from flax.nnx.graphcore import Node as Node
from flax.nnx.graphcore import PureState as PureState
from flax.nnx.graphcore import flat_view as flat_view
from flax.nnx.graphcore import graphdef as graphdef
from flax.nnx.graphcore import is_graph_node as is_graph_node
from flax.nnx.graphcore import is_node as is_node
from flax.nnx.graphcore import merge as merge
from flax.nnx.graphcore import order_attributes as order_attributes
from flax.nnx.graphcore import split as split
from flax.nnx.graphcore import state as state
from flax.nnx.graphcore import tree_parts as tree_parts
from flax.nnx.graphcore import variables as variables
from flax.nnx.graphcore import view_ids as view_ids
from flax.nnx.graphcore import view_mask as view_mask
from flax.nnx.graphctx import (
  GRAPH_CONTEXT as GRAPH_CONTEXT,
  GraphContext as GraphContext,
  MergeContext as MergeContext,
  SplitContext as SplitContext,
  UpdateContext as UpdateContext,
  UpdateContextManager as UpdateContextManager,
  current_update_context as current_update_context,
  merge_context as merge_context,
  split_context as split_context,
  update_context as update_context,
)
from flax.nnx.graphops import IndexMap as IndexMap
from flax.nnx.graphops import PythonRefMap as PythonRefMap
from flax.nnx.graphops import RefMap as RefMap
from flax.nnx.graphops import as_pure as as_pure
from flax.nnx.graphops import call as call
from flax.nnx.graphops import clone as clone
from flax.nnx.graphops import flatten as flatten
from flax.nnx.graphops import pure as pure
from flax.nnx.graphops import recursive_map as recursive_map
from flax.nnx.graphops import unflatten as unflatten
from flax.nnx.graphops import unpack as unpack
from flax.nnx.graphpaths import graphdef_paths as graphdef_paths
from flax.nnx.graphtree import tree_states as tree_states
from flax.nnx.graphwalk import check_tree as check_tree
from flax.nnx.graphwalk import find_duplicates as find_duplicates
from flax.nnx.graphwalk import iter_children as iter_children
from flax.nnx.graphwalk import iter_graph as iter_graph
from flax.nnx.graphwalk import iter_module_children as iter_module_children
from flax.nnx.graphwrite import graph_pop as graph_pop
from flax.nnx.graphwrite import pop as pop
from flax.nnx.graphwrite import update as update
from flax.nnx.statelib import State as State
from flax.nnx.variablelib import Variable as Variable


# Names of this module defined elsewhere, resolved on first access (``map``
# is not a global here so that the module keeps the builtin).
_ELSEWHERE = {
  'map': 'flax.nnx.graphops',
  **dict.fromkeys(
    (
      'ArrayRefDef ArrayRefOutput NodeDef TreeNodeDef VariableDef '
      'DataElem GenericPytree GraphNodeImpl LEAF_ATTR LeafAttr NODE_ATTR '
      'NO_UPDATE NodeAttr NodeImplBase NodeRef NoUpdate PYTREE_NODE_IMPL '
      'PytreeNodeImpl REPEATED Repeated Static StaticElem get_node_impl '
      'get_node_impl_for_type is_node_leaf is_node_module is_node_type '
      'is_pytree_node jax_to_nnx_path register_pytree_node_type '
      'register_graph_node_type IndexesPytreeDef _flatten_pytree '
      '_unflatten_pytree'
    ).split(),
    'flax.nnx.graphnodes',
  ),
  **dict.fromkeys('StaticCache static_cache'.split(), 'flax.nnx.graphctx'),
  **dict.fromkeys(
    'ApplyCaller CallableProxy DelayedAccessor'.split(),
    'flax.nnx.proxy_caller',
  ),
  **dict.fromkeys(
    'BaseConfigContext HashableMapping Key is_key_like'.split(),
    'flax.typing',
  ),
  **dict.fromkeys(
    'set_graph_mode set_graph_updates'.split(), 'flax.nnx._common'
  ),
  **dict.fromkeys('set_metadata vars_as with_vars'.split(), 'flax.nnx.varops'),
  'deprecated': 'flax.nnx.deprecations',
  'is_array_ref': 'flax.nnx.variablelib',
  'FlatState': 'flax.nnx.statelib',
  'map_state': 'flax.nnx.statelib',
  'cached_partial': 'flax.nnx.transforms.compilation',
}


def __getattr__(name):
  module = _ELSEWHERE.get(name)
  if module is not None:
    value = getattr(importlib.import_module(module), name)
    if name != 'map':
      globals()[name] = value
    return value
  if name == 'config':
    return flax.config
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def __dir__():
  return sorted(set(globals()) | set(_ELSEWHERE) | {'config'})
