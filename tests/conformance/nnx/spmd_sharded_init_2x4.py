"""Sharded init on a 2x4 mesh: eager, under nnx.jit and under
nnx.eval_shape, with nnx.with_partitioning initializers."""

import jax
import report
from flax import nnx


class MLP(nnx.Module):
  def __init__(self, rngs):
    part = nnx.with_partitioning
    init = nnx.initializers
    self.up = nnx.Linear(
      8,
      16,
      kernel_init=part(init.lecun_normal(), (None, 'model')),
      bias_init=part(init.zeros_init(), ('model',)),
      rngs=rngs,
    )
    self.down = nnx.Linear(
      16,
      8,
      kernel_init=part(init.lecun_normal(), ('model', 'data')),
      use_bias=False,
      rngs=rngs,
    )


mesh = jax.make_mesh((2, 4), ('data', 'model'))
with jax.set_mesh(mesh):
  eager = MLP(nnx.Rngs(0))
  jitted = nnx.jit(lambda: MLP(nnx.Rngs(0)))()
  abstract = nnx.eval_shape(lambda: MLP(nnx.Rngs(0)))
for name, model in (('eager', eager), ('jit', jitted)):
  report.text(f'{name} up kernel', str(model.up.kernel[...].sharding.spec))
  report.text(f'{name} up bias', str(model.up.bias[...].sharding.spec))
  report.text(f'{name} down kernel', str(model.down.kernel[...].sharding.spec))
report.tree('jit params', nnx.state(jitted, nnx.Param))
report.text(
  'abstract kernel spec', str(abstract.up.kernel.get_raw_value().sharding.spec)
)
report.value('abstract kernel shape', list(abstract.down.kernel.shape))
