"""Initializers: ``jax.nn.initializers`` plus Flax's builders.

Every initializer is called as ``init(key, shape, dtype)``. The names that
``jax.nn.initializers`` defines are re-exported unchanged (so they give the
same numbers as JAX); Flax adds ``zeros_init()`` and ``ones_init()``.

>>> import jax, jax.numpy as jnp
>>> from flax.layers.initializers import zeros_init
>>> zeros_init()(jax.random.key(0), (2,), jnp.float32)
Array([0., 0.], dtype=float32)
"""

from jax.nn.initializers import Initializer as Initializer
from jax.nn.initializers import constant as constant
from jax.nn.initializers import delta_orthogonal as delta_orthogonal
from jax.nn.initializers import glorot_normal as glorot_normal
from jax.nn.initializers import glorot_uniform as glorot_uniform
from jax.nn.initializers import he_normal as he_normal
from jax.nn.initializers import he_uniform as he_uniform
from jax.nn.initializers import kaiming_normal as kaiming_normal
from jax.nn.initializers import kaiming_uniform as kaiming_uniform
from jax.nn.initializers import lecun_normal as lecun_normal
from jax.nn.initializers import lecun_uniform as lecun_uniform
from jax.nn.initializers import normal as normal
from jax.nn.initializers import ones as ones
from jax.nn.initializers import orthogonal as orthogonal
from jax.nn.initializers import truncated_normal as truncated_normal
from jax.nn.initializers import uniform as uniform
from jax.nn.initializers import variance_scaling as variance_scaling
from jax.nn.initializers import xavier_normal as xavier_normal
from jax.nn.initializers import xavier_uniform as xavier_uniform
from jax.nn.initializers import zeros as zeros


def zeros_init() -> Initializer:
  """The ``zeros`` initializer, for code that builds its initializers.

  Flax spells constant initializers as factories (``zeros_init()``) so
  they read like ``lecun_normal()``; the key is ignored.

  >>> import jax, jax.numpy as jnp
  >>> from flax.layers.initializers import zeros_init
  >>> init = zeros_init()
  >>> init(jax.random.key(7), (1, 2), jnp.int32)
  Array([[0, 0]], dtype=int32)
  """
  return zeros


def ones_init() -> Initializer:
  """The ``ones`` initializer, for code that builds its initializers.

  The factory form of ``ones`` (see ``zeros_init``); the key is ignored.

  >>> import jax, jax.numpy as jnp
  >>> from flax.layers.initializers import ones_init
  >>> ones_init()(jax.random.key(7), (2,), jnp.bfloat16)
  Array([1, 1], dtype=bfloat16)
  """
  return ones


# Defaults shared by the Linen and NNX layers.
default_kernel_init = lecun_normal()
default_bias_init = zeros
default_scale_init = ones
default_embed_init = variance_scaling(1.0, 'fan_in', 'normal', out_axis=0)
default_recurrent_kernel_init = orthogonal()

__all__ = [
  'Initializer',
  'constant',
  'delta_orthogonal',
  'glorot_normal',
  'glorot_uniform',
  'he_normal',
  'he_uniform',
  'kaiming_normal',
  'kaiming_uniform',
  'lecun_normal',
  'lecun_uniform',
  'normal',
  'ones',
  'ones_init',
  'orthogonal',
  'truncated_normal',
  'uniform',
  'variance_scaling',
  'xavier_normal',
  'xavier_uniform',
  'zeros',
  'zeros_init',
]
