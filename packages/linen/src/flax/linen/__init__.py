"""The Linen API: ``from flax import linen as nn``.

Layers (``nn.Dense``, ...) and partitioning helpers come from other
distributions through the plugin registry and are resolved on first access.
"""

from flax.plugins import lazy_namespace as _lazy_namespace

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
