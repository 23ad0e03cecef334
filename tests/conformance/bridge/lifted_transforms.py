"""Linen lifted transforms over ToLinen and NNX transforms over ToNNX."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge

x = jnp.arange(6.0).reshape(2, 3) / 6
jitted = nn.jit(bridge.ToLinen)(nnx.Linear, args=(3, 2))
v = jitted.init(jax.random.key(0), x)
report.tree('nn.jit variables', v)
report.array('nn.jit y', jitted.apply(v, x))
remat = nn.remat(bridge.ToLinen)(nnx.Linear, args=(3, 2))
report.array('nn.remat y', remat.apply(remat.init(jax.random.key(0), x), x))
vmapped = nn.vmap(
  bridge.ToLinen,
  variable_axes={'params': 0},
  split_rngs={'params': True},
  in_axes=0,
)(nnx.Linear, args=(3, 2))
xs = jnp.stack([x, 2 * x])
vv = vmapped.init(jax.random.key(0), xs)
report.tree('nn.vmap variables', vv)
report.array('nn.vmap y', vmapped.apply(vv, xs))


@nnx.vmap(in_axes=(0,), out_axes=0)
def make(key):
  return bridge.lazy_init(bridge.ToNNX(nn.Dense(2), rngs=nnx.Rngs(key)), x)


stack = make(jax.random.split(jax.random.key(0), 3))
report.tree('nnx.vmap params', nnx.state(stack, nnx.Param))


@nnx.vmap(in_axes=(0, None))
def run(model, x):
  return model(x)


report.array('nnx.vmap y', run(stack, x))
