"""Variable reprs: values, sizes, metadata and nested values."""

import jax.numpy as jnp
import report
from flax import nnx

with report.printed('vector'):
  print(nnx.Param(jnp.ones(3), foo=1))
with report.printed('matrix'):
  print(nnx.Param(jnp.arange(6.0).reshape(2, 3)))
with report.printed('scalars'):
  print(nnx.Param(1.0))
  print(nnx.Param('abc'))
  print(nnx.Param(jnp.float32))
with report.printed('tuple'):
  print(nnx.Intermediate((jnp.ones(2), jnp.ones(3))))
with report.printed('sizes'):
  print(repr(nnx.Param(jnp.ones((100, 100)))).splitlines()[0])
  print(repr(nnx.Param(jnp.ones((1000, 1000)))).splitlines()[0])
  print(repr(nnx.Param(jnp.ones((300,)))).splitlines()[0])
