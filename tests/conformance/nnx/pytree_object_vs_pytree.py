"""nnx.Object and pytree=False: leaves for JAX, attributes unchecked."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class D(nnx.Pytree, pytree=False):
  def __init__(self):
    self.items = [jnp.ones(1)]
    self.x = 1


d = D()
report.value('pytree-false-is-leaf', jax.tree.leaves(d)[0] is d)
with report.raises('pytree-false-check'):
  nnx.check_pytree(d)


class Obj(nnx.Object):
  def __init__(self):
    self.items = [jnp.ones(1)]


o = Obj()
report.value('object-is-leaf', jax.tree.leaves(o)[0] is o)
report.value('object-mro', [c.__name__ for c in type(o).__mro__][:3])
report.value('object-is-data', nnx.is_data(o))
with report.printed('object-repr'):
  print(o)


class M(nnx.Module):
  def __init__(self):
    self.layers = [nnx.Param(jnp.ones(1))]


with report.raises('module-list-of-params'):
  M()
