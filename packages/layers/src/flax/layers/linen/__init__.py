"""The Linen layer zoo, exported into ``flax.linen``.

``from flax import linen as nn`` resolves ``nn.Dense``, ``nn.relu``,
``nn.avg_pool``... here through the plugin registry. The submodules mirror
Flax's layout (``linear``, ``attention``, ``normalization``, ``recurrent``,
``pooling``, ``stochastic``, ``activation``, ``initializers``, ``dtypes``).

>>> import jax, jax.numpy as jnp
>>> from flax import linen as nn
>>> params = nn.Dense(2).init(jax.random.key(0), jnp.ones((1, 3)))
>>> jax.tree_util.tree_map(jnp.shape, params)
{'params': {'bias': (2,), 'kernel': (3, 2)}}
"""

from flax.layers.linen import activation as activation
from flax.layers.linen import attention as attention
from flax.layers.linen import dtypes as dtypes
from flax.layers.linen import initializers as initializers
from flax.layers.linen import linear as linear
from flax.layers.linen import normalization as normalization
from flax.layers.linen import pooling as pooling
from flax.layers.linen import recurrent as recurrent
from flax.layers.linen import stochastic as stochastic
from flax.layers.linen.activation import *  # noqa: F403
from flax.layers.linen.attention import (
  MultiHeadAttention as MultiHeadAttention,
)
from flax.layers.linen.attention import (
  MultiHeadDotProductAttention as MultiHeadDotProductAttention,
)
from flax.layers.linen.attention import SelfAttention as SelfAttention
from flax.layers.linen.attention import combine_masks as combine_masks
from flax.layers.linen.attention import (
  dot_product_attention as dot_product_attention,
)
from flax.layers.linen.attention import (
  dot_product_attention_weights as dot_product_attention_weights,
)
from flax.layers.linen.attention import (
  make_attention_mask as make_attention_mask,
)
from flax.layers.linen.attention import make_causal_mask as make_causal_mask
from flax.layers.linen.initializers import ones as ones
from flax.layers.linen.initializers import ones_init as ones_init
from flax.layers.linen.initializers import zeros as zeros
from flax.layers.linen.initializers import zeros_init as zeros_init
from flax.layers.linen.linear import Conv as Conv
from flax.layers.linen.linear import ConvLocal as ConvLocal
from flax.layers.linen.linear import ConvTranspose as ConvTranspose
from flax.layers.linen.linear import Dense as Dense
from flax.layers.linen.linear import DenseGeneral as DenseGeneral
from flax.layers.linen.linear import Einsum as Einsum
from flax.layers.linen.linear import Embed as Embed
from flax.layers.linen.normalization import BatchNorm as BatchNorm
from flax.layers.linen.normalization import GroupNorm as GroupNorm
from flax.layers.linen.normalization import InstanceNorm as InstanceNorm
from flax.layers.linen.normalization import LayerNorm as LayerNorm
from flax.layers.linen.normalization import RMSNorm as RMSNorm
from flax.layers.linen.normalization import SpectralNorm as SpectralNorm
from flax.layers.linen.normalization import WeightNorm as WeightNorm
from flax.layers.linen.pooling import avg_pool as avg_pool
from flax.layers.linen.pooling import max_pool as max_pool
from flax.layers.linen.pooling import min_pool as min_pool
from flax.layers.linen.pooling import pool as pool
from flax.layers.linen.rnn import Bidirectional as Bidirectional
from flax.layers.linen.recurrent import ConvLSTMCell as ConvLSTMCell
from flax.layers.linen.recurrent import GRUCell as GRUCell
from flax.layers.linen.recurrent import LSTMCell as LSTMCell
from flax.layers.linen.recurrent import MGUCell as MGUCell
from flax.layers.linen.recurrent import OptimizedLSTMCell as OptimizedLSTMCell
from flax.layers.linen.rnn import RNN as RNN
from flax.layers.linen.recurrent import RNNCellBase as RNNCellBase
from flax.layers.linen.recurrent import SimpleCell as SimpleCell
from flax.layers.linen.stochastic import Dropout as Dropout
