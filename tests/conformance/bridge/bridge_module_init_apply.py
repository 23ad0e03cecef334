"""bridge.Module: compact submodules, param/variable, init and apply."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import bridge


class Dense(bridge.Module):
  def __init__(self, dout):
    self.dout = dout

  @bridge.compact
  def __call__(self, x):
    w = self.param(
      'w', nnx.initializers.lecun_normal(), (x.shape[-1], self.dout)
    )
    b = self.param('b', nnx.initializers.normal(0.1), (self.dout,))
    return x @ w + b[None]


class MLP(bridge.Module):
  @bridge.compact
  def __call__(self, x):
    x = Dense(3)(x)
    c = self.variable('counts', 'n', jnp.zeros, ())
    c.set_value(c.get_value() + 1)
    x = jax.nn.relu(x)
    return Dense(2, name='out')(x)


x = jnp.arange(8.0).reshape(2, 4) / 8
model = MLP()
variables = model.init({'params': 0}, x)
report.tree('variables', variables)
report.value(
  'module unchanged', sorted(k for k in vars(model) if not k.startswith('_'))
)
y, updates = model.apply(variables, x, mutable=['counts'])
report.array('y', y)
report.tree('updates', updates)
report.array('jit y', jax.jit(lambda v, x: model.apply(v, x))(variables, x))
report.tree('seed init', model.init(3, x))
grads = jax.grad(lambda p: jnp.sum(model.apply({**variables, 'params': p}, x)))(
  variables['params']
)
report.tree('grads', grads)
with report.raises('unbound call'):
  Dense(3)(x)
with report.raises('missing params stream'):
  model.apply({'params': {}}, x)
