"""Eager sharding: Variables with out_sharding are placed when created
(context mesh, mesh metadata, logical axis rules); without a mesh it is an
error unless eager sharding is off."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

mesh = jax.make_mesh((2, 4), ('data', 'model'))
with jax.set_mesh(mesh):
  p = nnx.Param(jnp.ones((4, 8)), out_sharding=('data', 'model'))
report.text('context mesh', str(p[...].sharding.spec))
q = nnx.Param(jnp.ones((4, 8)), out_sharding=('data', None), mesh=mesh)
report.text('mesh metadata', str(q[...].sharding.spec))
rules = [('embed', 'data'), ('mlp', 'model')]
with jax.set_mesh(mesh), nnx.logical_axis_rules(rules):
  r = nnx.Param(jnp.ones((4, 8)), out_sharding=('embed', 'mlp'))
report.text('logical rules', str(r[...].sharding.spec))
with nnx.use_eager_sharding(False):
  s = nnx.Param(jnp.ones((4, 8)), out_sharding=('embed', 'mlp'))
report.value('eager off', s.get_metadata()['eager_sharding'])
with report.raises('no mesh'):
  nnx.Param(jnp.ones((4, 8)), out_sharding=('embed', 'mlp'))
