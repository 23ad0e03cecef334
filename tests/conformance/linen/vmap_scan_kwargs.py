"""nn.vmap / nn.scan drop keyword arguments of the method with a warning."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class Scaled(nn.Module):
  @nn.compact
  def __call__(self, x, scale=1.0):
    w = self.param('w', nn.initializers.ones, (x.shape[-1],))
    return x * w[None] * scale if x.ndim == 2 else x * w * scale


V = nn.vmap(Scaled, variable_axes={'params': 0}, split_rngs={'params': True})
with report.warns('vmap kwargs'):
  y, v = V().init_with_output(jax.random.key(0), jnp.ones((3, 4)), scale=5.0)
report.array('vmap y', y)


class Body(nn.Module):
  @nn.compact
  def __call__(self, c, x, scale=1.0):
    return c + x * scale, c


S = nn.scan(Body, variable_broadcast='params', split_rngs={'params': False})
with report.warns('scan kwargs'):
  (c, ys), _ = S().init_with_output(
    jax.random.key(0), jnp.zeros(2), jnp.ones((3, 2)), scale=5.0
  )
report.array('scan carry', c)
report.array(
  'remat kwargs',
  nn.remat(Scaled)().init_with_output(
    jax.random.key(0), jnp.ones((3, 4)), scale=2.0
  )[0],
)
