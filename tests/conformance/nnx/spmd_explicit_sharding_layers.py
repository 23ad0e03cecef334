"""Explicit-sharding meshes: Dropout and attention dropout keep the input
sharding, Variables take a NamedSharding as out_sharding, and an
Optimizer's state is sharded as its parameters."""

import jax
import jax.numpy as jnp
import optax
import report
from flax import nnx

mesh = jax.make_mesh(
  (2, 4), ('a', 'b'), axis_types=(jax.sharding.AxisType.Explicit,) * 2
)
named = jax.NamedSharding(mesh, jax.P('a', 'b'))

v = nnx.Param(jnp.ones((4, 8)), out_sharding=named)
report.value('NamedSharding out_sharding spec', str(v.out_sharding.spec))
report.value('NamedSharding value spec', str(v[...].sharding.spec))
kernel_init = nnx.with_partitioning(nnx.initializers.ones, named)
linear = nnx.Linear(4, 8, kernel_init=kernel_init, rngs=nnx.Rngs(0))
report.value(
  'with_partitioning(NamedSharding) spec', str(linear.kernel[...].sharding.spec)
)

with jax.set_mesh(mesh):
  x = jax.device_put(jnp.arange(32.0).reshape(4, 8), jax.P('a', 'b'))
  y = nnx.Dropout(0.5, rngs=nnx.Rngs(1))(x)
  report.value('dropout spec', str(y.sharding.spec))
  report.array('dropout values', y)
  y = nnx.jit(lambda m, x: m(x))(nnx.Dropout(0.5, rngs=nnx.Rngs(1)), x)
  report.value('dropout under jit spec', str(y.sharding.spec))
  report.array('dropout under jit values', y)
  report.value(
    'deterministic dropout spec',
    str(
      nnx.Dropout(0.5, rngs=nnx.Rngs(1))(x, deterministic=True).sharding.spec
    ),
  )
  xa = jax.device_put(jnp.ones((2, 3, 8)), jax.P('a', None, None))
  mha = nnx.MultiHeadAttention(
    num_heads=2,
    in_features=8,
    qkv_features=8,
    decode=False,
    dropout_rate=0.5,
    rngs=nnx.Rngs(0),
  )
  out = mha(xa, deterministic=False)
  report.value('attention dropout spec', str(out.sharding.spec))
  report.array('attention dropout values', out, rtol=1e-4, atol=1e-5)
  out = mha(xa, mask=nnx.make_causal_mask(jnp.ones((2, 3))), deterministic=True)
  report.value('attention causal spec', str(out.sharding.spec))

  model = nnx.Linear(
    4,
    8,
    kernel_init=nnx.with_partitioning(
      nnx.initializers.lecun_normal(), ('a', 'b')
    ),
    bias_init=nnx.with_partitioning(nnx.initializers.zeros, ('b',)),
    rngs=nnx.Rngs(0),
  )
  opt = nnx.Optimizer(model, optax.adam(0.1), wrt=nnx.Param)
  adam = opt.opt_state[0]
  report.value('mu kernel spec', str(adam.mu['kernel'][...].sharding.spec))
  report.value('nu bias spec', str(adam.nu['bias'][...].sharding.spec))
  report.value('count spec', str(adam.count[...].sharding.spec))
  report.value('mu kernel out_sharding', list(adam.mu['kernel'].out_sharding))
  specs = nnx.get_partition_spec(nnx.state(opt, nnx.OptState))
  report.value(
    'optimizer state partition specs',
    jax.tree.map(str, nnx.to_pure_dict(specs)),
  )
