"""nnx.Optimizer / ModelAndOptimizer state sharding: optimizer_sharding
metadata (alone and beside with_partitioning's sharding) shards every
optimizer state leaf mirroring the Variable (adam, sgd with momentum,
chained and injected transforms), on explicit- and auto-axes meshes,
eagerly, when built under nnx.jit and after an update."""

import jax
import jax.numpy as jnp
import optax
import report
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P
from flax import nnx


def describe(label, node):
  rows = []
  for path, v in jax.tree_util.tree_leaves_with_path(
    nnx.state(node), is_leaf=lambda x: isinstance(x, nnx.Variable)
  ):
    a = v[...]
    rows.append(
      ' '.join(
        [
          jax.tree_util.keystr(path),
          type(v).__name__,
          str(jax.typeof(a)),
          str(getattr(a.sharding, 'spec', None)),
          str(v.get_metadata()),
        ]
      )
    )
  report.text(label, '\n'.join(rows))


opt_init = nnx.with_metadata(
  jax.nn.initializers.lecun_normal(), optimizer_sharding=P('x', 'y')
)
both_init = nnx.with_partitioning(
  jax.nn.initializers.lecun_normal(),
  ('x', 'y'),
  optimizer_sharding=P(None, 'y'),
)
bias_init = nnx.with_partitioning(nnx.initializers.zeros_init(), ('y',))
txs = {
  'adam': lambda: optax.adam(1e-3),
  'sgd': lambda: optax.sgd(1e-3),
  'sgd momentum': lambda: optax.sgd(1e-3, momentum=0.9),
  'chain': lambda: optax.chain(
    optax.clip_by_global_norm(1.0), optax.adamw(1e-3)
  ),
  'inject': lambda: optax.inject_hyperparams(optax.adam)(learning_rate=1e-3),
}
x = jnp.ones((4, 2))
for axes, kind in (('explicit', AxisType.Explicit), ('auto', AxisType.Auto)):
  with jax.set_mesh(jax.make_mesh((2, 4), ('x', 'y'), axis_types=(kind,) * 2)):
    model = nnx.Linear(
      2, 8, kernel_init=opt_init, bias_init=bias_init, rngs=nnx.Rngs(0)
    )
    both = nnx.Linear(
      2, 8, kernel_init=both_init, use_bias=False, rngs=nnx.Rngs(0)
    )
    describe(f'{axes} model', model)
    for name, tx in txs.items():
      describe(f'{axes} {name}', nnx.Optimizer(model, tx(), wrt=nnx.Param))
    opt = nnx.Optimizer(both, optax.adam(1e-3), wrt=nnx.Param)
    describe(f'{axes} both', opt)
    made = nnx.jit(lambda m: nnx.Optimizer(m, optax.adam(1e-3), wrt=nnx.Param))(
      both
    )
    describe(f'{axes} built under jit', made)
    grads = nnx.grad(lambda m: m(x).sum())(both)
    opt.update(both, grads)
    describe(f'{axes} both after eager update', opt)
    mao = nnx.ModelAndOptimizer(model, optax.sgd(1e-3, momentum=0.9))
    describe(f'{axes} model and optimizer', mao)
    mao.update(nnx.grad(lambda m: (m(x) ** 2).sum())(mao.model))
    describe(f'{axes} model and optimizer after update', mao)
    report.array(
      f'{axes} trace after update', mao.opt_state[0].trace['kernel'][...]
    )
    if axes == 'auto':

      @nnx.jit
      def step(model, opt):
        opt.update(model, nnx.grad(lambda m: m(x).sum())(model))

      step(both, opt)
      describe('auto both after jit update', opt)
      report.array(
        'auto nu after jit update', opt.opt_state[0].nu['kernel'][...]
      )
    report.text(
      f'{axes} partition specs',
      str(
        nnx.get_partition_spec(
          nnx.state(nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param))
        )
      ),
    )


class Odd(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(
      jnp.ones((2, 8)), out_sharding=P('x', 'y'), optimizer_sharding=None
    )
    self.b = nnx.Param(jnp.ones((2, 8)), out_sharding=None, foo=1)
    self.c = nnx.Param(
      jnp.ones((2, 8)),
      optimizer_sharding=P(None, 'x'),
      foo=2,
      out_sharding=P('x', None),
    )
    self.d = nnx.Param(
      jnp.ones((2, 8)), optimizer_sharding=P(None, 'x'), eager_sharding=False
    )


with jax.set_mesh(
  jax.make_mesh((2, 4), ('x', 'y'), axis_types=(AxisType.Explicit,) * 2)
):
  describe(
    'metadata variants', nnx.Optimizer(Odd(), optax.adam(1e-3), wrt=nnx.Param)
  )
  bad = nnx.Linear(
    2,
    8,
    kernel_init=nnx.with_metadata(
      jax.nn.initializers.lecun_normal(), optimizer_sharding=P('x', 'z')
    ),
    rngs=nnx.Rngs(0),
  )
  with report.raises('axis not in mesh'):
    nnx.Optimizer(bad, optax.adam(1e-3), wrt=nnx.Param)
  with report.raises('factored state of another rank'):
    nnx.Optimizer(
      model, optax.adafactor(1e-3, min_dim_size_to_factor=2), wrt=nnx.Param
    )
no_mesh = nnx.Linear(2, 8, kernel_init=opt_init, rngs=nnx.Rngs(0))
with report.raises('no mesh'):
  nnx.Optimizer(no_mesh, optax.adam(1e-3), wrt=nnx.Param)
