"""bridge.ToNNX of a custom Linen Module: param values for Rngs and a key."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge


class Affine(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    k = self.param(
      'kernel', nn.initializers.lecun_normal(), (x.shape[-1], self.features)
    )
    b = self.param('bias', nn.initializers.normal(0.1), (self.features,))
    return x @ k + b[None]


x = jnp.arange(8.0).reshape(2, 4) / 8
a = bridge.lazy_init(bridge.ToNNX(Affine(3), rngs=nnx.Rngs(0)), x)
report.tree('from rngs', nnx.state(a, nnx.Param))
report.array('y', a(x))
b = bridge.lazy_init(bridge.ToNNX(Affine(3), rngs=jax.random.key(2)), x)
report.tree('from key', nnx.state(b, nnx.Param))
report.value('key streams', list(b.rngs))
c = bridge.lazy_init(bridge.ToNNX(Affine(3), rngs=nnx.Rngs(params=5)), x)
report.tree('params stream', nnx.state(c, nnx.Param))
report.value('module', type(c.module).__name__)
