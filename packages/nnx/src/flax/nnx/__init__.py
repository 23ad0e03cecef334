"""The NNX API: ``from flax import nnx``.

Layers (``nnx.Linear``, ...) and training helpers (``nnx.Optimizer``,
``nnx.metrics``) come from other distributions through the plugin registry
and are resolved on first access.
"""

# The JAX functions NNX layers take as default arguments are bound now,
# when flax.nnx is imported, not when a layer class is first used.
from flax.core import jax_defaults as _jax_defaults  # noqa: F401
from flax.plugins import lazy_namespace
from flax.nnx import deprecations as _deprecations
from flax.nnx import filterlib as filterlib
from flax.nnx import graphlib as graphlib
from flax.nnx import rnglib as rnglib
from flax.nnx import statelib as statelib
from flax.nnx import variablelib as variablelib
from flax.nnx._common import graph_mode as graph_mode
from flax.nnx._common import set_graph_mode as set_graph_mode
from flax.nnx._common import set_graph_updates as set_graph_updates
from flax.nnx.filterlib import All as All
from flax.nnx.filterlib import Any as Any
from flax.nnx.filterlib import Everything as Everything
from flax.nnx.filterlib import Not as Not
from flax.nnx.filterlib import Nothing as Nothing
from flax.nnx.filterlib import OfType as OfType
from flax.nnx.filterlib import PathContains as PathContains
from flax.nnx.filterlib import PathIn as PathIn
from flax.nnx.filterlib import WithTag as WithTag
from flax.nnx.graphlib import GraphDef as GraphDef
from flax.nnx.graphlib import PureState as PureState
from flax.nnx.graphlib import call as call
from flax.nnx.graphlib import clone as clone
from flax.nnx.graphlib import find_duplicates as find_duplicates
from flax.nnx.graphlib import graphdef as graphdef
from flax.nnx.graphlib import is_graph_node as is_graph_node
from flax.nnx.graphlib import iter_graph as iter_graph
from flax.nnx.graphlib import merge as merge
from flax.nnx.graphlib import pop as pop
from flax.nnx.graphlib import split as split
from flax.nnx.graphlib import state as state
from flax.nnx.graphlib import update as update
from flax.nnx.graphlib import variables as variables
from flax.nnx.graphctx import MergeContext as MergeContext
from flax.nnx.graphctx import SplitContext as SplitContext
from flax.nnx.graphctx import UpdateContext as UpdateContext
from flax.nnx.graphctx import current_update_context as current_update_context
from flax.nnx.graphctx import merge_context as merge_context
from flax.nnx.graphctx import split_context as split_context
from flax.nnx.graphctx import update_context as update_context
from flax.nnx.extract import NodeStates as NodeStates
from flax.nnx.extract import from_tree as from_tree
from flax.nnx.extract import prefix as prefix
from flax.nnx.extract import to_tree as to_tree
from flax.nnx.graphops import GraphState as GraphState
from flax.nnx.graphops import as_pure as as_pure
from flax.nnx.graphops import flatten as flatten
from flax.nnx.graphops import map as map
from flax.nnx.graphops import pure as pure
from flax.nnx.graphops import recursive_map as recursive_map
from flax.nnx.graphops import unflatten as unflatten
from flax.nnx.graphops import unpack as unpack
from flax.nnx.containers import Dict as Dict
from flax.nnx.containers import List as List
from flax.nnx.module import Module as Module
from flax.nnx.module import iter_children as iter_children
from flax.nnx.module import iter_module_children as iter_module_children
from flax.nnx.module import iter_modules as iter_modules
from flax.nnx.module import set_attributes as set_attributes
from flax.nnx.pytreelib import Data as Data
from flax.nnx.pytreelib import Object as Object
from flax.nnx.pytreelib import Pytree as Pytree
from flax.nnx.pytreelib import Static as Static
from flax.nnx.pytreelib import check_pytree as check_pytree
from flax.nnx.pytreelib import data as data
from flax.nnx.pytreelib import dataclass as dataclass
from flax.nnx.pytreelib import has_data as has_data
from flax.nnx.pytreelib import is_data as is_data
from flax.nnx.pytreelib import register_data_type as register_data_type
from flax.nnx.pytreelib import static as static
from flax.nnx.varops import set_metadata as set_metadata
from flax.nnx.varops import vars_as as vars_as
from flax.nnx.varops import with_vars as with_vars
from flax.nnx.module import capture as capture
from flax.nnx.module import view as view
from flax.nnx.module import view_info as view_info
from flax.nnx.module import with_attributes as with_attributes
from flax.nnx.rnglib import RngCount as RngCount
from flax.nnx.rnglib import RngKey as RngKey
from flax.nnx.rnglib import Rngs as Rngs
from flax.nnx.rnglib import RngState as RngState
from flax.nnx.rnglib import RngStream as RngStream
from flax.nnx.rnglib import fork_rngs as fork_rngs
from flax.nnx.rnglib import reseed as reseed
from flax.nnx.rnglib import restore_rngs as restore_rngs
from flax.nnx.rnglib import split_rngs as split_rngs
from flax.nnx.rnglib import with_rngs as with_rngs
from flax.nnx.statelib import FlatState as FlatState
from flax.nnx.statelib import State as State
from flax.nnx.statelib import filter_state as filter_state
from flax.nnx.statelib import from_flat_state as from_flat_state
from flax.nnx.statelib import map_state as map_state
from flax.nnx.statelib import merge_state as merge_state
from flax.nnx.statelib import replace_by_pure_dict as replace_by_pure_dict
from flax.nnx.statelib import restore_int_paths as restore_int_paths
from flax.nnx.statelib import split_state as split_state
from flax.nnx.statelib import to_flat_state as to_flat_state
from flax.nnx.statelib import to_pure_dict as to_pure_dict

from flax.nnx.variablelib import BatchStat as BatchStat
from flax.nnx.variablelib import Cache as Cache
from flax.nnx.variablelib import Intermediate as Intermediate
from flax.nnx.variablelib import Param as Param
from flax.nnx.variablelib import Perturbation as Perturbation
from flax.nnx.variablelib import Variable as Variable
from flax.nnx.variablelib import A as A
from flax.nnx.variablelib import VariableMetadata as VariableMetadata
from flax.nnx.variablelib import (
  register_variable_name as register_variable_name,
)
from flax.nnx.variablelib import (
  variable_name_from_type as variable_name_from_type,
)
from flax.nnx.variablelib import (
  variable_type_from_name as variable_type_from_name,
)
from flax.nnx.variablelib import with_metadata as with_metadata
from flax.nnx._vardefaults import use_eager_sharding as use_eager_sharding
from flax.nnx._vardefaults import using_eager_sharding as using_eager_sharding
from flax.nnx._vardefaults import var_defaults as var_defaults


# Every other name (``nnx.jit``, ``nnx.helpers``, ``nnx.Linear``,
# ``nnx.Optimizer``, ...) comes from the first-party export table and the
# plugins, on first access; the plugins are looked up only then.
_plugin_hooks: list = []


def _plugin_namespace():
  if not _plugin_hooks:
    _plugin_hooks.extend(lazy_namespace(__name__))
  return _plugin_hooks


def __getattr__(name):
  if name in _deprecations.REMOVED_ALIASES:
    return _deprecations.removed_alias(globals(), name)
  return _plugin_namespace()[0](name)


def __dir__():
  return _plugin_namespace()[1]()
