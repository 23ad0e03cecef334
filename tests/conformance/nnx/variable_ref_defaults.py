"""ref=True Variables (jax.Ref), nnx.var_defaults, use_eager_sharding,
set_metadata and with_vars / vars_as."""

import jax.numpy as jnp
import report
from flax import nnx

q = nnx.Param(jnp.ones(2), ref=True)
report.value('ref', [q.ref, q.hijax])
report.value('raw-type', type(q.get_raw_value()).__name__)
q[...] = jnp.zeros(2)
report.array('ref-set', q[...])
with report.printed('ref-repr'):
  print(q)
report.value('plain', [nnx.Param(1).ref, nnx.Param(1).hijax])

with report.printed('var_defaults'):
  print(nnx.var_defaults())
  print(dict(nnx.var_defaults()))
  with nnx.var_defaults(ref=True):
    print(dict(nnx.var_defaults()), nnx.Param(jnp.ones(1)).ref)
  print(dict(nnx.var_defaults()))
  print(type(nnx.var_defaults(ref=False)).__name__)


@nnx.var_defaults(ref=True)
def make():
  return nnx.Param(jnp.ones(1))


report.value('decorator', [make().ref, nnx.Param(jnp.ones(1)).ref])

report.value('eager-default', nnx.using_eager_sharding())
with nnx.use_eager_sharding(False):
  report.value('eager-in-context', nnx.using_eager_sharding())
  p = nnx.Param('abc')
report.value('eager-after', nnx.using_eager_sharding())
with report.printed('eager-false-repr'):
  print(p)


class M(nnx.Module):
  def __init__(self):
    self.kernel = nnx.Param(jnp.ones(2))
    self.bias = nnx.Param(jnp.zeros(2))


m = M()
nnx.set_metadata(m, tag='hi')
report.value('set_metadata', [m.kernel.tag, m.bias.tag])
nnx.set_metadata(m, only=nnx.PathContains('kernel'), foo=1)
report.value(
  'set_metadata-only',
  [m.kernel.has_metadata('foo'), m.bias.has_metadata('foo')],
)
m2 = nnx.vars_as(m, ref=True)
report.value(
  'vars_as', [m2 is m, m2.kernel is m.kernel, m2.kernel.ref, m.kernel.ref]
)
report.value('with_vars-back', nnx.with_vars(m2, ref=False).kernel.ref)
m4 = nnx.with_vars(m, ref=True, only=nnx.PathContains('bias'))
report.value('with_vars-only', [m4.bias.ref, m4.kernel is m.kernel])
m.shared = m.kernel
with report.raises('with_vars-duplicates'):
  nnx.with_vars(m, ref=True)
m5 = nnx.with_vars(m, ref=True, allow_duplicates=True)
report.value('with_vars-shared', m5.shared is m5.kernel)
