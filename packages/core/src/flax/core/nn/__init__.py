"""Functional layers on :class:`flax.core.Scope` (``flax.core.nn``).

Each layer is a function ``layer(scope, inputs, ...)`` that declares its
parameters with ``scope.param`` (same names and shapes as the Linen
layers) and returns the output:

>>> import jax, jax.numpy as jnp
>>> from flax.core import init, nn
>>> y, variables = init(nn.dense)(jax.random.key(0), jnp.ones((2, 3)), 4)
>>> jax.tree_util.tree_map(jnp.shape, variables)
{'params': {'bias': (4,), 'kernel': (3, 4)}}
"""

from jax.nn import (
  celu,
  elu,
  gelu,
  glu,
  leaky_relu,
  log_sigmoid,
  log_softmax,
  relu,
  sigmoid,
  silu,
  soft_sign,
  softmax,
  softplus,
  swish,
)
from jax.numpy import tanh

from flax.core.nn import activation as activation
from flax.core.nn import initializers as initializers
from flax.core.nn.attention import (
  dot_product_attention,
  multi_head_dot_product_attention,
)
from flax.core.nn.linear import (
  Embedding,
  conv,
  conv_transpose,
  dense,
  dense_general,
  embedding,
)
from flax.core.nn.normalization import batch_norm, group_norm, layer_norm
from flax.core.nn.pooling import avg_pool, max_pool, pool
from flax.core.nn.stochastic import dropout

__all__ = [
  'Embedding',
  'activation',
  'avg_pool',
  'initializers',
  'max_pool',
  'pool',
  'batch_norm',
  'celu',
  'conv',
  'conv_transpose',
  'dense',
  'dense_general',
  'dot_product_attention',
  'dropout',
  'elu',
  'embedding',
  'gelu',
  'glu',
  'group_norm',
  'layer_norm',
  'leaky_relu',
  'log_sigmoid',
  'log_softmax',
  'multi_head_dot_product_attention',
  'relu',
  'sigmoid',
  'silu',
  'soft_sign',
  'softmax',
  'softplus',
  'swish',
  'tanh',
]
