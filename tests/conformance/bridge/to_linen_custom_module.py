"""bridge.ToLinen of a custom NNX Module: values, nnx_method, skip_rng."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import bridge


class Affine(nnx.Module):
  def __init__(self, din, dout, *, rngs):
    self.kernel = nnx.Param(
      nnx.initializers.lecun_normal()(rngs.params(), (din, dout))
    )
    self.bias = nnx.Param(jax.random.normal(rngs.params(), (dout,)) * 0.1)

  def __call__(self, x):
    return x @ self.kernel[...] + self.bias[...][None]

  def double(self, x):
    return 2 * self(x)


x = jnp.arange(8.0).reshape(2, 4) / 8
model = bridge.ToLinen(Affine, args=(4, 3))
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', model.apply(variables, x))
report.array('by name', model.apply(variables, x, nnx_method='double'))
report.array('by function', model.apply(variables, x, nnx_method=Affine.double))
skip = bridge.to_linen(Affine, 4, 3, skip_rng=True, rngs=nnx.Rngs(params=7))
report.tree('skip_rng', skip.init(jax.random.key(0), x))
with report.printed('repr'):
  print(model)
