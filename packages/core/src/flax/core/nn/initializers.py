"""Initializers (``flax.core.nn.initializers``), as in ``jax.nn``.

>>> import jax
>>> from flax.core.nn import initializers
>>> initializers.zeros_init()(jax.random.key(0), (2,))
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
  """Returns an initializer of zeros (``jax.nn.initializers.zeros``)."""
  return zeros


def ones_init() -> Initializer:
  """Returns an initializer of ones (``jax.nn.initializers.ones``)."""
  return ones
