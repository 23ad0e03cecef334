"""Activation functions exported by Flax.

They are JAX's own functions (``jax.nn`` and ``jax.numpy.tanh``), so
``flax.linen.relu is jax.nn.relu``; ``normalize`` is an alias of
``standardize``.

>>> import jax.numpy as jnp
>>> from flax.layers.activations import relu, one_hot
>>> relu(jnp.array([-1.0, 2.0]))
Array([0., 2.], dtype=float32)
>>> one_hot(jnp.array([1]), 3)
Array([[0., 1., 0.]], dtype=float32)
"""

import jax.nn as _jnn
from jax.nn import celu as celu
from jax.nn import elu as elu
from jax.nn import gelu as gelu
from jax.nn import glu as glu
from jax.nn import hard_sigmoid as hard_sigmoid
from jax.nn import hard_silu as hard_silu
from jax.nn import hard_swish as hard_swish
from jax.nn import hard_tanh as hard_tanh
from jax.nn import identity as identity
from jax.nn import leaky_relu as leaky_relu
from jax.nn import log_sigmoid as log_sigmoid
from jax.nn import log_softmax as log_softmax
from jax.nn import logsumexp as logsumexp
from jax.nn import mish as mish
from jax.nn import one_hot as one_hot
from jax.nn import relu as relu
from jax.nn import relu6 as relu6
from jax.nn import selu as selu
from jax.nn import sigmoid as sigmoid
from jax.nn import silu as silu
from jax.nn import soft_sign as soft_sign
from jax.nn import softmax as softmax
from jax.nn import softplus as softplus
from jax.nn import standardize as standardize
from jax.nn import swish as swish
from jax.numpy import tanh as tanh

normalize = standardize  # Flax's alias

# Every name imported above, in alphabetical order.
__all__ = sorted(n for n in globals() if not n.startswith('_'))

# Newer activations, exported when the installed JAX has them.
for _name in ('sparse_plus', 'sparse_sigmoid', 'squareplus', 'log1mexp'):
  if hasattr(_jnn, _name):
    globals()[_name] = getattr(_jnn, _name)
    __all__.append(_name)
del _name
