"""as_abstract, abstract_with_sharding (deprecated) and get_abstract_model
on a 2x4 mesh."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self, rngs):
    self.l = nnx.Linear(
      4,
      8,
      kernel_init=nnx.with_partitioning(
        nnx.initializers.lecun_normal(), ('data', 'model')
      ),
      bias_init=nnx.with_partitioning(
        nnx.initializers.zeros_init(), ('model',)
      ),
      rngs=rngs,
    )
    self.b = nnx.BatchStat(jnp.zeros((8,)))


mesh = jax.make_mesh((2, 4), ('data', 'model'))
graphdef, state = nnx.get_abstract_model(lambda: M(nnx.Rngs(0)), mesh)
for path in (('l', 'kernel'), ('l', 'bias'), ('b',)):
  value = state[path[0]] if len(path) == 1 else state[path[0]][path[1]]
  sds = value.get_raw_value()
  report.value(f'{path} shape', list(sds.shape))
  report.text(f'{path} sharding', repr(sds.sharding))
with jax.set_mesh(mesh):
  concrete = M(nnx.Rngs(0))
  abstract = nnx.eval_shape(lambda: M(nnx.Rngs(0)))
  with report.warns('deprecated alias'):
    old = nnx.abstract_with_sharding(abstract)
  new = nnx.as_abstract(abstract)
report.value('as_abstract copies', nnx.as_abstract(concrete) is not concrete)
report.text('as_abstract kernel', repr(new.l.kernel.get_raw_value()))
report.text('alias kernel', repr(old.l.kernel.get_raw_value()))
