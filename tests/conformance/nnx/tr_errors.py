"""Error classes: outer-trace mutation, mismatched axes, scan carry changes."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(3))
    self.n = nnx.BatchStat(jnp.array(0))


m = M()


@nnx.jit
def outer(x):
  m.n[...] += 1
  return x


with report.raises('closure-mutation-jit'):
  outer(1.0)

m = M()


@jax.jit
def jax_outer(x):
  m.n[...] = x
  return x


with report.raises('closure-mutation-jax-jit'):
  jax_outer(jnp.array(3))

m = M()


def grad_outer(x):
  def inner(y):
    m.w[...] = y
    return jnp.sum(y)

  return nnx.grad(inner)(x)


with report.raises('grad-closure'):
  nnx.jit(grad_outer)(jnp.ones(3))

with report.raises('vmap-axis-size-mismatch'):
  nnx.vmap(lambda a, b: a + b)(jnp.ones(3), jnp.ones(4))

with report.raises('vmap-axes-len'):
  nnx.vmap(lambda a, b: a + b, in_axes=(0,))(jnp.ones(3), jnp.ones(3))

with report.raises('vmap-module-bad-axis'):
  nnx.vmap(lambda m: m.w[...], in_axes=(2,))(M())


def shape_change(c, x):
  return jnp.concatenate([c, c]), x


with report.raises('scan-carry-shape'):
  nnx.scan(shape_change, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))(
    jnp.zeros(2), jnp.ones(3)
  )

with report.raises('cond-branch-mismatch'):
  nnx.cond(True, lambda m: m.w[...], lambda m: m.n[...], M())
