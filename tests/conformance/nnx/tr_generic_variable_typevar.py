"""nnx.A: the type parameter of generic Variable subclasses."""

import jax.numpy as jnp
import report
from flax import nnx


class Broadcast(nnx.Variable[nnx.A]):
  pass


report.value('A name', nnx.A.__name__)
report.value('A is variablelib.A', nnx.A is nnx.variablelib.A)
v = Broadcast(jnp.ones(2))
report.value('shape', list(v.shape))
report.array('value', v[...])
report.value('is Variable', isinstance(v, nnx.Variable))
