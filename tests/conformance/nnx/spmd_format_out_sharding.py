"""A Variable's out_sharding may be a jax Format (layout and sharding):
eager sharding places the value with both, under jit it is a constraint."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from jax.experimental.layout import Format, Layout
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh(
  (2, 4), ('data', 'model'), axis_types=(jax.sharding.AxisType.Auto,) * 2
)
ns = NamedSharding(mesh, P('data', None))
for order in [(1, 0), (0, 1)]:
  fmt = Format(Layout(major_to_minor=order), ns)
  v = nnx.Variable(jnp.arange(32.0).reshape(4, 8), out_sharding=fmt)
  report.value(f'{order}-sharding', [v.sharding == ns, v.out_sharding == fmt])
  report.value(f'{order}-layout', list(v[...].format.layout.major_to_minor))
  report.array(f'{order}-value', v[...])
  out = jax.jit(lambda x: nnx.Param(x, out_sharding=fmt)[...])(jnp.ones((4, 8)))
  report.value(
    f'{order}-jit',
    [str(out.sharding.spec), list(out.format.layout.major_to_minor)],
  )

lazy = nnx.Variable(jnp.ones((4, 8)), out_sharding=fmt, eager_sharding=False)
report.value('lazy', lazy.sharding == ns)
with report.raises('no-sharding'):
  nnx.Variable(jnp.ones((4, 8)), out_sharding=Format(Layout((1, 0))))
