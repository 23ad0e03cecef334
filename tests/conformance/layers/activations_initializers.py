"""Activations and initializers of both APIs agree with Flax."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx

x = jnp.linspace(-3, 3, 13)
for name in (
  'relu',
  'gelu',
  'silu',
  'swish',
  'softplus',
  'elu',
  'celu',
  'leaky_relu',
  'sigmoid',
  'tanh',
  'log_softmax',
  'softmax',
  'hard_tanh',
  'glu',
  'selu',
  'standardize',
):
  if name == 'glu':
    report.array(f'nn-{name}', nn.glu(x[:12]))
    continue
  report.array(f'nn-{name}', getattr(nn, name)(x))
  report.array(f'nnx-{name}', getattr(nnx, name)(x))
key = jax.random.key(0)
for name, init in (
  ('lecun_normal', nn.initializers.lecun_normal()),
  ('xavier_uniform', nn.initializers.xavier_uniform()),
  ('he_normal', nn.initializers.he_normal()),
  ('normal', nn.initializers.normal(0.02)),
  ('truncated_normal', nn.initializers.truncated_normal(0.1)),
  ('orthogonal', nn.initializers.orthogonal()),
  ('zeros', nn.initializers.zeros_init()),
  ('ones', nn.initializers.ones_init()),
):
  report.array(f'init-{name}', init(key, (4, 3)))
report.array('nnx-default-kernel', nnx.initializers.lecun_normal()(key, (3, 2)))
