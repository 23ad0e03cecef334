"""bridge.ToNNX: running another Linen method by name or function."""

import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge


class Enc(nn.Module):
  def setup(self):
    self.conv = nn.Conv(3, (2,))

  def __call__(self, x):
    return self.conv(x)

  def encode_twice(self, x):
    return self.conv(self.conv(x[..., :2])[..., :2])


x = jnp.arange(8.0).reshape(1, 4, 2) / 8
m = bridge.ToNNX(Enc(), rngs=nnx.Rngs(0))
bridge.lazy_init(m, jnp.ones((1, 4, 2)), method='encode_twice')
report.tree('params', nnx.state(m, nnx.Param))
report.array('call', m(x))
report.array('by name', m(x, method='encode_twice'))
report.array('by function', m(x, method=Enc.encode_twice))
