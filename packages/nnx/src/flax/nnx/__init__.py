"""The NNX API: ``from flax import nnx``.

Layers (``nnx.Linear``, ...) and training helpers (``nnx.Optimizer``,
``nnx.metrics``) come from other distributions through the plugin registry
and are resolved on first access.
"""

from flax.plugins import lazy_namespace as _lazy_namespace

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
