"""nnx.Data / nnx.Static annotations, class-level nnx.data() and
check_pytree."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class B(nnx.Pytree):
  x: nnx.Data[int]

  def __init__(self):
    self.x = 1


report.value('data-annotation', jax.tree.leaves(B()))


class C(nnx.Pytree):
  y: nnx.Static[jax.Array]

  def __init__(self):
    self.y = jnp.ones(1)


with report.raises('static-annotation-array'):
  C()


class D(nnx.Pytree):
  x = nnx.data()

  def __init__(self):
    self.x = 5


report.value('class-data-field', jax.tree.leaves(D()))
report.text('Data', repr(nnx.Data))
report.text('Static', repr(nnx.Static))


class E(nnx.Pytree):
  def __init__(self):
    self.items = [1, 2]


e = E()
nnx.check_pytree(e)
e.items.append(jnp.ones(1))
with report.raises('check_pytree-appended-array'):
  nnx.check_pytree(e)
report.value('appended-not-a-leaf', jax.tree.leaves(e))
