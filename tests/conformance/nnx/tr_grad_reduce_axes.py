"""grad / value_and_grad / vjp refuse a non-empty reduce_axes, also when
used as decorator factories (at decoration time)."""

import jax.numpy as jnp
import report
from flax import nnx

with report.raises('grad-factory'):
  nnx.grad(reduce_axes=('batch',))
with report.raises('value-and-grad-factory'):
  nnx.value_and_grad(reduce_axes=('batch',))
with report.raises('grad-with-f'):
  nnx.grad(lambda x: x, reduce_axes=('batch',))
with report.raises('vjp-tree'):
  nnx.vjp(lambda x: x, jnp.ones(2), reduce_axes=('batch',), graph=False)


@nnx.grad(reduce_axes=())
def g(x):
  return jnp.sum(x**2)


report.array('empty-reduce-axes', g(jnp.arange(3.0)))
