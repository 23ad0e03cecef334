"""get_var_pspec, get_partition_spec and get_named_sharding."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import spmd

r = nnx.Param(
  jnp.ones((4, 8)), out_sharding=('embed', 'mlp'), eager_sharding=False
)
report.text('pspec', str(spmd.get_var_pspec(r)))
report.text('no sharding', str(spmd.get_var_pspec(nnx.Param(jnp.ones(2)))))
with nnx.logical_axis_rules([('embed', 'data'), ('mlp', 'model')]):
  report.text('with rules', str(spmd.get_var_pspec(r)))
r2 = nnx.Param(
  jnp.ones((4, 8)),
  out_sharding=('embed', 'mlp'),
  sharding_rules=[('embed', 'model'), ('mlp', None)],
  eager_sharding=False,
)
report.text('variable rules', str(spmd.get_var_pspec(r2)))
state = nnx.State({'a': r, 'b': nnx.Param(jnp.ones(3)), 'c': jnp.ones(2)})
report.text('partition specs', repr(nnx.get_partition_spec(state)))
mesh = jax.make_mesh((2, 4), ('data', 'model'))
with nnx.logical_axis_rules([('embed', 'data'), ('mlp', 'model')]):
  shardings = nnx.get_named_sharding(state, mesh)
report.text('named sharding a', str(shardings['a'].get_value().spec))
report.text('named sharding c', str(shardings['c'].spec))
