"""The NNX layer zoo, exported into ``flax.nnx`` (``nnx.Linear`` ...).

Layers are ``nnx.Module`` subclasses built eagerly from an ``nnx.Rngs``;
their state names and shapes are Flax's, so a Linen and an NNX model of the
same architecture hold the same arrays.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
>>> model(jnp.ones((1, 2))).shape
(1, 3)
"""

from flax.layers.nnx import initializers as initializers
from flax.layers.nnx.activations import *  # noqa: F403
from flax.layers.nnx.activations import PReLU as PReLU
from flax.layers.nnx.attention import MultiHeadAttention as MultiHeadAttention
from flax.layers.nnx.attention import combine_masks as combine_masks
from flax.layers.nnx.attention import (
  dot_product_attention as dot_product_attention,
)
from flax.layers.nnx.attention import (
  dot_product_attention_weights as dot_product_attention_weights,
)
from flax.layers.nnx.attention import make_attention_mask as make_attention_mask
from flax.layers.nnx.attention import make_causal_mask as make_causal_mask
from flax.layers.nnx.combinators import Sequential as Sequential
from flax.layers.nnx.conv import Conv as Conv
from flax.layers.nnx.conv import ConvTranspose as ConvTranspose
from flax.layers.nnx.linear import Einsum as Einsum
from flax.layers.nnx.linear import Embed as Embed
from flax.layers.nnx.linear import Linear as Linear
from flax.layers.nnx.linear import LinearGeneral as LinearGeneral
from flax.layers.nnx.lora import LoRA as LoRA
from flax.layers.nnx.lora import LoRALinear as LoRALinear
from flax.layers.nnx.lora import LoRAParam as LoRAParam
from flax.layers.nnx.normalization import BatchNorm as BatchNorm
from flax.layers.nnx.normalization import GroupNorm as GroupNorm
from flax.layers.nnx.normalization import InstanceNorm as InstanceNorm
from flax.layers.nnx.normalization import LayerNorm as LayerNorm
from flax.layers.nnx.normalization import RMSNorm as RMSNorm
from flax.layers.nnx.normalization import SpectralNorm as SpectralNorm
from flax.layers.nnx.normalization import WeightNorm as WeightNorm
from flax.layers.nnx.pooling import avg_pool as avg_pool
from flax.layers.nnx.pooling import max_pool as max_pool
from flax.layers.nnx.pooling import min_pool as min_pool
from flax.layers.nnx.pooling import pool as pool
from flax.layers.nnx.recurrent import RNN as RNN
from flax.layers.nnx.recurrent import Bidirectional as Bidirectional
from flax.layers.nnx.recurrent import GRUCell as GRUCell
from flax.layers.nnx.recurrent import LSTMCell as LSTMCell
from flax.layers.nnx.recurrent import OptimizedLSTMCell as OptimizedLSTMCell
from flax.layers.nnx.recurrent import RNNCellBase as RNNCellBase
from flax.layers.nnx.recurrent import SimpleCell as SimpleCell
from flax.layers.nnx.recurrent import flip_sequences as flip_sequences
from flax.layers.nnx.stochastic import Dropout as Dropout
