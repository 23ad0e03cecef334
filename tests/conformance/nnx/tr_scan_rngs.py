"""split_rngs / fork_rngs under nnx.scan: fresh keys per step."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class Noise(nnx.Module):
  def __init__(self, rngs):
    self.rngs = rngs

  def __call__(self, x):
    return x + self.rngs.noise.normal(x.shape)


m = Noise(nnx.Rngs(noise=0))


@nnx.split_rngs(splits=4)
@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))
def run(x, m):
  y = m(x)
  return y, y


c, ys = run(jnp.zeros(2), m)
report.array('split-ys', ys)
report.array('split-count', m.rngs.noise.count[...])
report.value('split-shape-after', list(m.rngs.noise.key.shape))

m = Noise(nnx.Rngs(noise=0))


@nnx.scan(in_axes=(nnx.Carry, None), out_axes=(nnx.Carry, 0), length=3)
def run_bcast(x, m):
  y = m(x)
  return y, y


c, ys = run_bcast(jnp.zeros(2), m)
report.array('bcast-ys', ys)
report.array('bcast-count', m.rngs.noise.count[...])

m = Noise(nnx.Rngs(noise=0))
axes = nnx.StateAxes({nnx.RngKey: 0, nnx.RngCount: 0, ...: None})


@nnx.split_rngs(splits=3)
@nnx.scan(in_axes=(nnx.Carry, axes), out_axes=(nnx.Carry, 0))
def run_axes(x, m):
  y = m(x)
  return y, y


c, ys = run_axes(jnp.zeros(2), m)
report.array('axes-ys', ys)

rngs = nnx.Rngs(0)
with nnx.fork_rngs(rngs, split=3):
  report.value('fork-ctx', list(rngs.default.key.shape))
  keys = jax.random.key_data(rngs.default.key[...])
report.array('fork-keys', keys)
report.value('fork-after', list(rngs.default.key.shape))
