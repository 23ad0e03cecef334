"""The Linen API: ``from flax import linen as nn``.

Linen Modules are dataclasses that describe a computation; ``init`` creates
their variables and ``apply`` runs them. This distribution provides the
Module system, the lifted transforms, ``Sequential`` and ``tabulate``.
Layers (``nn.Dense``, ...) and partitioning helpers come from other
distributions through the plugin registry and are resolved on first access.

>>> import jax, jax.numpy as jnp
>>> from flax import linen as nn
>>> class Bias(nn.Module):
...   @nn.compact
...   def __call__(self, x):
...     return x + self.param('b', jax.nn.initializers.zeros, x.shape[-1:])
>>> variables = Bias().init(jax.random.key(0), jnp.ones((1, 3)))
>>> jax.tree_util.tree_map(jnp.shape, variables)
{'params': {'b': (3,)}}
"""

from flax.core.frozen_dict import FrozenDict as FrozenDict
from flax.core.meta import PARTITION_NAME as PARTITION_NAME
from flax.core.meta import Partitioned as Partitioned
from flax.core.meta import get_partition_spec as get_partition_spec
from flax.core.meta import get_sharding as get_sharding
from flax.core.meta import unbox as unbox
from flax.core.meta import with_partitioning as with_partitioning
from flax.core.scope import CollectionFilter as CollectionFilter
from flax.core.scope import DenyList as DenyList
from flax.core.scope import Variable as Variable
from flax.linen._context import disable_named_call as disable_named_call
from flax.linen._context import enable_named_call as enable_named_call
from flax.linen._context import override_named_call as override_named_call
from flax.linen._functional import apply as apply
from flax.linen._functional import init as init
from flax.linen._functional import init_with_output as init_with_output
from flax.linen._functional import intercept_methods as intercept_methods
from flax.linen._functional import merge_param as merge_param
from flax.linen._functional import share_scope as share_scope
from flax.linen.combinators import Sequential as Sequential
from flax.linen.module import Module as Module
from flax.linen.module import compact as compact
from flax.linen.module import nowrap as nowrap
from flax.linen.summary import tabulate as tabulate
from flax.linen.transforms import add_metadata_axis as add_metadata_axis
from flax.linen.transforms import broadcast as broadcast
from flax.linen.transforms import checkpoint as checkpoint
from flax.linen.transforms import cond as cond
from flax.linen.transforms import custom_vjp as custom_vjp
from flax.linen.transforms import fold_rngs as fold_rngs
from flax.linen.transforms import grad as grad
from flax.linen.transforms import jit as jit
from flax.linen.transforms import jvp as jvp
from flax.linen.transforms import map_variables as map_variables
from flax.linen.transforms import remat as remat
from flax.linen.transforms import remat_scan as remat_scan
from flax.linen.transforms import scan as scan
from flax.linen.transforms import switch as switch
from flax.linen.transforms import value_and_grad as value_and_grad
from flax.linen.transforms import vjp as vjp
from flax.linen.transforms import vmap as vmap
from flax.linen.transforms import while_loop as while_loop
from flax.plugins import lazy_namespace as _lazy_namespace
from flax.typing import Collection as Collection

named_call = override_named_call

_HINTS = {
  name: 'flax-layers'
  for name in (
    'Dense',
    'DenseGeneral',
    'Einsum',
    'Conv',
    'ConvTranspose',
    'ConvLocal',
    'Embed',
    'BatchNorm',
    'LayerNorm',
    'RMSNorm',
    'GroupNorm',
    'InstanceNorm',
    'SpectralNorm',
    'WeightNorm',
    'Dropout',
    'MultiHeadDotProductAttention',
    'MultiHeadAttention',
    'SelfAttention',
    'dot_product_attention',
    'dot_product_attention_weights',
    'make_attention_mask',
    'make_causal_mask',
    'combine_masks',
    'LSTMCell',
    'OptimizedLSTMCell',
    'GRUCell',
    'MGUCell',
    'SimpleCell',
    'ConvLSTMCell',
    'RNN',
    'Bidirectional',
    'PReLU',
    'avg_pool',
    'max_pool',
    'min_pool',
    'pool',
    'relu',
    'gelu',
    'sigmoid',
    'softmax',
    'tanh',
    'initializers',
    'activation',
  )
}
_HINTS.update(
  {
    name: 'flax-spmd'
    for name in (
      'with_logical_partitioning',
      'LogicallyPartitioned',
      'with_logical_constraint',
      'logical_to_mesh',
      'logical_to_mesh_axes',
      'logical_to_mesh_sharding',
      'get_logical_axis_rules',
      'set_logical_axis_rules',
      'logical_axis_rules',
    )
  }
)

__getattr__, __dir__ = _lazy_namespace(__name__, _HINTS)
