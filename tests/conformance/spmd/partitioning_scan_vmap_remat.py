"""flax.linen.partitioning: scan_with_axes, vmap_with_axes, remat."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax.linen import partitioning as nnp


class Layer(nn.Module):
  @nn.compact
  def __call__(self, x, _):
    n = x.shape[-1]
    k = nnp.param_with_axes(
      'kernel', nn.initializers.ones, (n, n), axes=('embed', 'mlp')
    )
    return x @ k / n, None


Scanned = nnp.scan_with_axes(
  Layer, variable_axes={'params': 0}, split_rngs={'params': True}, length=3
)
Mapped = nnp.vmap_with_axes(
  Layer,
  variable_axes={'params': 1},
  split_rngs={'params': True},
  partitioning_axis_names={'params': 'heads'},
  in_axes=(0, None),
)
report.text('class names', repr((Scanned.__name__, Mapped.__name__)))


class Model(nn.Module):
  @nn.compact
  def __call__(self, x):
    y, _ = Scanned()(x, None)
    y2, _ = Mapped()(jnp.stack([x, x]), None)
    return y, y2


variables = Model().init(jax.random.key(0), jnp.ones((2, 4)))
report.text('params_axes', repr(variables['params_axes']))
report.tree(
  'shapes', jax.tree_util.tree_map(jnp.shape, variables['params']), values=False
)
y, y2 = Model().apply({'params': variables['params']}, jnp.ones((2, 4)))
report.array('y', y)
report.array('y2', y2)


class Flagged(nn.Module):
  @nn.compact
  def __call__(self, x, flag):
    k = nnp.param_with_axes('k', nn.initializers.ones, (2,), axes=('embed',))
    return x * k if flag else x


R = nnp.remat(Flagged, static_argnums=(1,))
report.text('remat name', R.__name__)
report.tree(
  'remat init', R().init(jax.random.key(0), jnp.ones(2), True)['params']
)
