"""Plugin of the flax-layers distribution.

Exports the Linen layer classes into ``flax.linen`` and the NNX ones into
``flax.nnx``. Only names and import strings live here, so plugin discovery
imports nothing heavy.
"""

from flax.plugins import Export
from flax.plugins import hookimpl

# The activation functions (flax.layers.activations.__all__, before the ones
# that depend on the installed JAX), exported into both namespaces.
ACTIVATIONS = (
  'celu',
  'elu',
  'gelu',
  'glu',
  'hard_sigmoid',
  'hard_silu',
  'hard_swish',
  'hard_tanh',
  'identity',
  'leaky_relu',
  'log_sigmoid',
  'log_softmax',
  'logsumexp',
  'mish',
  'normalize',
  'one_hot',
  'relu',
  'relu6',
  'selu',
  'sigmoid',
  'silu',
  'soft_sign',
  'softmax',
  'softplus',
  'standardize',
  'swish',
  'tanh',
)

# Names that flax.layers.linen defines, exported as flax.linen.<name>.
LINEN = [
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
  'RNNCellBase',
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
  *ACTIVATIONS,
  'sparse_plus',
  'sparse_sigmoid',
  'ones',
  'ones_init',
  'zeros',
  'zeros_init',
]

# Names that flax.layers.nnx defines, exported as flax.nnx.<name>.
NNX = [
  'Linear',
  'LinearGeneral',
  'Einsum',
  'Embed',
  'Conv',
  'ConvTranspose',
  'BatchNorm',
  'LayerNorm',
  'RMSNorm',
  'GroupNorm',
  'InstanceNorm',
  'Dropout',
  'MultiHeadAttention',
  'dot_product_attention',
  'dot_product_attention_weights',
  'make_attention_mask',
  'make_causal_mask',
  'combine_masks',
  'RNNCellBase',
  'LSTMCell',
  'OptimizedLSTMCell',
  'GRUCell',
  'SimpleCell',
  'RNN',
  'Bidirectional',
  'flip_sequences',
  'LoRA',
  'LoRALinear',
  'LoRAParam',
  'Sequential',
  'PReLU',
  'avg_pool',
  'max_pool',
  'min_pool',
  'pool',
  *ACTIVATIONS,
]

# Whole submodules: (namespace, name, module path).
MODULES = [
  ('flax.linen', 'activation', 'flax.layers.linen.activation'),
  ('flax.linen', 'attention', 'flax.layers.linen.attention'),
  ('flax.linen', 'dtypes', 'flax.layers.linen.dtypes'),
  ('flax.linen', 'initializers', 'flax.layers.linen.initializers'),
  ('flax.linen', 'linear', 'flax.layers.linen.linear'),
  ('flax.linen', 'normalization', 'flax.layers.linen.normalization'),
  ('flax.linen', 'pooling', 'flax.layers.linen.pooling'),
  ('flax.linen', 'recurrent', 'flax.layers.linen.recurrent'),
  ('flax.linen', 'stochastic', 'flax.layers.linen.stochastic'),
  ('flax.nnx', 'initializers', 'flax.layers.nnx.initializers'),
  ('flax.nnx', 'nn', 'flax.nnx.nn'),
]


@hookimpl
def flax_exports():
  return (
    [Export('flax.linen', n, f'flax.layers.linen:{n}') for n in LINEN]
    + [Export('flax.nnx', n, f'flax.layers.nnx:{n}') for n in NNX]
    + [Export(ns, n, module) for ns, n, module in MODULES]
  )
