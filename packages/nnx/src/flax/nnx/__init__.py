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
from flax.nnx.graphlib import view as view
from flax.nnx.module import Module as Module
from flax.nnx.module import iter_children as iter_children
from flax.nnx.module import iter_modules as iter_modules
from flax.nnx.module import set_attributes as set_attributes
from flax.nnx.pytreelib import Object as Object
from flax.nnx.pytreelib import Pytree as Pytree
from flax.nnx.pytreelib import data as data
from flax.nnx.pytreelib import static as static
from flax.nnx.rnglib import RngCount as RngCount
from flax.nnx.rnglib import RngKey as RngKey
from flax.nnx.rnglib import Rngs as Rngs
from flax.nnx.rnglib import RngState as RngState
from flax.nnx.rnglib import RngStream as RngStream
from flax.nnx.rnglib import fork_rngs as fork_rngs
from flax.nnx.rnglib import reseed as reseed
from flax.nnx.rnglib import restore_rngs as restore_rngs
from flax.nnx.rnglib import split_rngs as split_rngs
from flax.nnx.statelib import FlatState as FlatState
from flax.nnx.statelib import State as State
from flax.nnx.transforms.autodiff import custom_vjp as custom_vjp
from flax.nnx.transforms.autodiff import grad as grad
from flax.nnx.transforms.autodiff import jvp as jvp
from flax.nnx.transforms.autodiff import value_and_grad as value_and_grad
from flax.nnx.transforms.autodiff import vjp as vjp
from flax.nnx.transforms.compilation import cached_partial as cached_partial
from flax.nnx.transforms.compilation import jit as jit
from flax.nnx.transforms.general import checkpoint as checkpoint
from flax.nnx.transforms.general import cond as cond
from flax.nnx.transforms.general import eval_shape as eval_shape
from flax.nnx.transforms.general import fori_loop as fori_loop
from flax.nnx.transforms.general import remat as remat
from flax.nnx.transforms.general import switch as switch
from flax.nnx.transforms.general import while_loop as while_loop
from flax.nnx.transforms.iteration import pmap as pmap
from flax.nnx.transforms.iteration import scan as scan
from flax.nnx.transforms.iteration import shard_map as shard_map
from flax.nnx.transforms.iteration import vmap as vmap
from flax.nnx.transforms.types import Carry as Carry
from flax.nnx.transforms.types import DiffState as DiffState
from flax.nnx.transforms.types import StateAxes as StateAxes
from flax.nnx.transforms.types import StateSharding as StateSharding
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
from flax.nnx.spmd import PARTITION_NAME as PARTITION_NAME
from flax.nnx.spmd import get_named_sharding as get_named_sharding
from flax.nnx.spmd import get_partition_spec as get_partition_spec
from flax.nnx.spmd import with_partitioning as with_partitioning
from flax.nnx.summary import display as display

from flax.plugins import lazy_namespace as _lazy_namespace

graph = graphlib

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
    for name in ('Optimizer', 'ModelAndOptimizer', 'metrics', 'OptState')
  }
)

__getattr__, __dir__ = _lazy_namespace(__name__, _HINTS)
