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
>>> variables = Bias().init(jax.random.key(0), jnp.ones(3))
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
from flax.linen._context import named_call as named_call
from flax.linen._context import override_named_call as override_named_call
from flax.linen._functional import apply as apply
from flax.linen._functional import init as init
from flax.linen._functional import init_with_output as init_with_output
from flax.linen._functional import intercept_methods as intercept_methods
from flax.linen._functional import merge_param as merge_param
from flax.linen._functional import share_scope as share_scope
from flax.linen.batch_apply import BatchApply as BatchApply
from flax.linen.combinators import Sequential as Sequential
from flax.linen.module import Module as Module
from flax.linen.module import compact as compact
from flax.linen.module import compact_name_scope as compact_name_scope
from flax.linen.module import nowrap as nowrap
from flax.plugins import lazy_namespace as _lazy_namespace
from flax.typing import Collection as Collection


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

# Imported on first use, to keep ``from flax import linen`` cheap.
_LAZY = {
  'tabulate': 'flax.linen.summary',
  'add_metadata_axis': 'flax.linen.transforms',
  'broadcast': 'flax.linen.transforms',
  'checkpoint': 'flax.linen.transforms',
  'cond': 'flax.linen.transforms',
  'custom_vjp': 'flax.linen.transforms',
  'fold_rngs': 'flax.linen.transforms',
  'grad': 'flax.linen.transforms',
  'jit': 'flax.linen.transforms',
  'jvp': 'flax.linen.transforms',
  'map_variables': 'flax.linen.transforms',
  'remat': 'flax.linen.transforms',
  'remat_scan': 'flax.linen.transforms',
  'scan': 'flax.linen.transforms',
  'switch': 'flax.linen.transforms',
  'value_and_grad': 'flax.linen.transforms',
  'vjp': 'flax.linen.transforms',
  'vmap': 'flax.linen.transforms',
  'while_loop': 'flax.linen.transforms',
  'transforms': 'flax.linen.transforms',
  'summary': 'flax.linen.summary',
  'batch_apply': 'flax.linen.batch_apply',
  'kw_only_dataclasses': 'flax.linen.kw_only_dataclasses',
}

_plugin_getattr, _plugin_dir = _lazy_namespace(__name__, _HINTS)


def __getattr__(name):
  target = _LAZY.get(name)
  if target is None:
    return _plugin_getattr(name)
  import importlib

  module = importlib.import_module(target)
  value = module if target.endswith(name) else getattr(module, name)
  globals()[name] = value
  return value


def __dir__():
  return sorted(set(_plugin_dir()) | set(_LAZY))
