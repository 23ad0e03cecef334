"""Linen norms: force_float32_reductions with bfloat16 inputs."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

x = (jnp.linspace(-3, 3, 32).reshape(2, 2, 8) + 300).astype(jnp.bfloat16)
for force in (True, False):
  for name, layer in (
    ('layer', nn.LayerNorm(force_float32_reductions=force)),
    ('rms', nn.RMSNorm(force_float32_reductions=force)),
    ('group', nn.GroupNorm(num_groups=2, force_float32_reductions=force)),
    ('instance', nn.InstanceNorm(force_float32_reductions=force)),
    (
      'batch',
      nn.BatchNorm(use_running_average=False, force_float32_reductions=force),
    ),
  ):
    v = layer.init(jax.random.key(0), x)
    y, state = layer.apply(v, x, mutable=['batch_stats'])
    report.array(f'{name}-{force}', y, rtol=1e-2, atol=1e-2)
    report.tree(f'{name}-{force}-state', state)
