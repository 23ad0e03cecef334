"""bridge.wrappers.to_linen_class: Linen classes made from an NNX class."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge

Base = bridge.wrappers.to_linen_class(nnx.Conv, kernel_size=(2,))
report.value('class name', Base.__name__)
report.value('is ToLinen', issubclass(Base, bridge.ToLinen))


class LinenConv(Base):
  pass


model = LinenConv(in_features=3, out_features=2, name='c')
with report.printed('repr'):
  print(model)
x = jnp.arange(12.0).reshape(1, 4, 3) / 12
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)


class Top(nn.Module):
  @nn.compact
  def __call__(self, x):
    return LinenConv(in_features=3, out_features=2, use_bias=False)(x)


report.tree('in a parent', Top().init(jax.random.key(1), x))
direct = Base(nnx.Conv, args=(3, 2, (2,)))
report.tree('direct', direct.init(jax.random.key(0), x))
