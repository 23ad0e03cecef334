"""The NNX API: ``from flax import nnx``.

Layers (``nnx.Linear``, ...) and training helpers (``nnx.Optimizer``,
``nnx.metrics``) come from other distributions through the plugin registry
and are resolved on first access.
"""

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
from flax.nnx.views import capture as capture
from flax.nnx.views import view as view
from flax.nnx.views import view_info as view_info
from flax.nnx.views import with_attributes as with_attributes
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


# Names whose modules load on first access (transforms pull in most of the
# import time of flax.nnx beyond JAX itself).
_LAZY = {
  'TrainState': ('flax.nnx.helpers', 'TrainState'),
  'Carry': ('flax.nnx.transforms.types', 'Carry'),
  'DiffState': ('flax.nnx.transforms.types', 'DiffState'),
  'PARTITION_NAME': ('flax.nnx.spmd', 'PARTITION_NAME'),
  'abstract_with_sharding': ('flax.nnx.spmd', 'abstract_with_sharding'),
  'as_abstract': ('flax.nnx.spmd', 'as_abstract'),
  'get_abstract_model': ('flax.nnx.spmd', 'get_abstract_model'),
  'logical_axis_rules': ('flax.core.spmd', 'logical_axis_rules'),
  'StateAxes': ('flax.nnx.transforms.types', 'StateAxes'),
  'StateSharding': ('flax.nnx.transforms.types', 'StateSharding'),
  'cached_partial': ('flax.nnx.transforms.compilation', 'cached_partial'),
  'checkify': ('flax.nnx.transforms.transforms', 'checkify'),
  'make_jaxpr': ('flax.nnx.transforms.transforms', 'make_jaxpr'),
  'checkpoint': ('flax.nnx.transforms.general', 'checkpoint'),
  'cond': ('flax.nnx.transforms.general', 'cond'),
  'custom_vjp': ('flax.nnx.transforms.autodiff', 'custom_vjp'),
  'display': ('flax.nnx.visualization', 'display'),
  'eval_shape': ('flax.nnx.transforms.general', 'eval_shape'),
  'fori_loop': ('flax.nnx.transforms.general', 'fori_loop'),
  'get_named_sharding': ('flax.nnx.spmd', 'get_named_sharding'),
  'get_partition_spec': ('flax.nnx.spmd', 'get_partition_spec'),
  'grad': ('flax.nnx.transforms.autodiff', 'grad'),
  'jit': ('flax.nnx.transforms.compilation', 'jit'),
  'jvp': ('flax.nnx.transforms.autodiff', 'jvp'),
  'pmap': ('flax.nnx.transforms.iteration', 'pmap'),
  'remat': ('flax.nnx.transforms.general', 'remat'),
  'scan': ('flax.nnx.transforms.iteration', 'scan'),
  'shard_map': ('flax.nnx.transforms.iteration', 'shard_map'),
  'switch': ('flax.nnx.transforms.general', 'switch'),
  'tabulate': ('flax.nnx.summary', 'tabulate'),
  'value_and_grad': ('flax.nnx.transforms.autodiff', 'value_and_grad'),
  'vjp': ('flax.nnx.transforms.autodiff', 'vjp'),
  'vmap': ('flax.nnx.transforms.iteration', 'vmap'),
  'while_loop': ('flax.nnx.transforms.general', 'while_loop'),
  'with_partitioning': ('flax.nnx.spmd', 'with_partitioning'),
}

_HINTS = {
  name: 'flax-layers'
  for name in (
    'Linear',
    'LinearGeneral',
    'Einsum',
    'Conv',
    'ConvTranspose',
    'Embed',
    'BatchNorm',
    'LayerNorm',
    'RMSNorm',
    'GroupNorm',
    'InstanceNorm',
    'Dropout',
    'MultiHeadAttention',
    'LSTMCell',
    'OptimizedLSTMCell',
    'GRUCell',
    'SimpleCell',
    'RNN',
    'Bidirectional',
    'LoRA',
    'LoRALinear',
    'Sequential',
    'avg_pool',
    'max_pool',
    'min_pool',
    'relu',
    'gelu',
    'softmax',
    'initializers',
  )
}
_HINTS.update(
  {
    name: 'flax-training'
    for name in (
      'Optimizer',
      'ModelAndOptimizer',
      'metrics',
      'optimizer',
      'OptState',
      'OptArray',
      'OptVariable',
      'Metric',
      'MultiMetric',
      'EMA',
    )
  }
)

_plugin_hooks: list = []


def _plugin_namespace():
  # flax.plugins' lazy namespace, built on first use: unknown names
  # resolve through the plugin registry (flax-layers, flax-training, ...).
  if not _plugin_hooks:
    from flax.plugins import lazy_namespace

    _plugin_hooks.extend(lazy_namespace(__name__, _HINTS))
  return _plugin_hooks


# Submodules that load on first access (``nnx.helpers``, ``nnx.compat``...).
_SUBMODULES = {
  'bridge': 'flax.nnx.bridge',
  'compat': 'flax.nnx.compat',
  'extract': 'flax.nnx.extract',
  'graph': 'flax.nnx.graph',
  'proxy_caller': 'flax.nnx.proxy_caller',
  'traversals': 'flax.nnx.traversals',
  'deprecations': 'flax.nnx.deprecations',
  'helpers': 'flax.nnx.helpers',
  'ids': 'flax.nnx.ids',
  'object': 'flax.nnx.pytreelib',
  'pytreelib': 'flax.nnx.pytreelib',
  'reprlib': 'flax.nnx.reprlib',
  'spmd': 'flax.nnx.spmd',
  'summary': 'flax.nnx.summary',
  'tracers': 'flax.nnx.tracers',
  'training': 'flax.nnx.training',
  'visualization': 'flax.nnx.visualization',
}


def __getattr__(name):
  module_name = _SUBMODULES.get(name)
  if module_name is not None:
    import importlib

    value = importlib.import_module(module_name)
    globals()[name] = value
    return value
  target = _LAZY.get(name)
  if target is not None:
    import importlib

    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value
  return _plugin_namespace()[0](name)


def __dir__():
  return sorted(set(_plugin_namespace()[1]()) | set(_LAZY) | set(_SUBMODULES))
