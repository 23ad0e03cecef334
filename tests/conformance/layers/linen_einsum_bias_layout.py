"""nn.Einsum / nnx.Einsum: bias over the kernel's output axes, in output
order, with ellipses."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx

cases = (
  ((6, 4, 7), 'bd,hdk->bkh', (2, 4)),
  ((3, 4, 5), 'nd,...de->n...e', (2, 4)),
  ((4, 3), '...d,dk->...k', (2, 3, 4)),
)
for i, (shape, eq, xs) in enumerate(cases):
  x = jnp.linspace(0, 1, int(jnp.prod(jnp.array(xs)))).reshape(xs)
  layer = nn.Einsum(shape, eq, bias_init=nn.initializers.normal(1.0))
  variables = layer.init(jax.random.key(i), x)
  report.tree(f'linen-{i}', variables)
  report.array(f'linen-out-{i}', layer.apply(variables, x))
  m = nnx.Einsum(eq, shape, rngs=nnx.Rngs(i))
  report.array(f'nnx-out-{i}', m(x, out_sharding=None))
