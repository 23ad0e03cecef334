"""Pytree attributes: data/static status from values, sticky status and
nnx.data / nnx.static overrides."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class A(nnx.Pytree):
  def __init__(self):
    self.z = jnp.ones(1)
    self.a = jnp.zeros(1)
    self.s = 1


a = A()
report.tree('leaves', a)
a.z = 'hello'
report.value(
  'data-stays-data',
  [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(a)],
)
a.s = nnx.data(jnp.full(1, 2.0))
report.tree('override-to-data', a)
a.z = nnx.static(2)
report.value(
  'override-to-static',
  [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(a)],
)
del a.s
a.s = 'x'
report.value(
  'after-delete',
  [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(a)],
)
a.w = nnx.data(3)
report.value('data-int-leaf', jax.tree.leaves(a))
with report.raises('array-into-static'):
  a.s = jnp.ones(1)
with report.raises('tuple-with-array-into-static'):
  a.t = (1, jnp.ones(1))
with report.raises('static-marker-with-array'):
  a.q = nnx.static(jnp.ones(1))
