"""The attribute order of input objects after NNX transforms: sorted by
the graph-update transforms (so a printed model, ``vars`` and nnx.Dict
iteration change after a jitted step), left alone by the others."""

import jax.numpy as jnp
import optax
import report
from flax import nnx


class Model(nnx.Module):
  def __init__(self):
    self.lin = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    self.act = 'relu'
    self.extra = nnx.Dict({'z': nnx.Param(jnp.ones(1)), 'a': 1})
    self.bias = nnx.Param(jnp.zeros(1))

  def __call__(self, x):
    return self.lin(x) + self.bias[None]


def public(obj):
  return [k for k in vars(obj) if not str(k).startswith('_pytree')]


x = jnp.ones((3, 2))
for name, kw in [
  ('graph', {}),
  ('graph_updates=False', {'graph_updates': False}),
  ('tree', {'graph': False}),
]:
  model = Model()
  opt = nnx.Optimizer(
    model, optax.sgd(0.1), wrt=nnx.Param, **({'graph': False} if kw else {})
  )

  @nnx.jit(**kw)
  def step(model, opt):
    loss, grads = nnx.value_and_grad(lambda m: (m(x) ** 2).mean(), **kw)(model)
    opt.update(model, grads)
    return loss

  step(model, opt)
  report.value(f'{name}: model', public(model))
  report.value(f'{name}: linear', public(model.lin))
  report.value(f'{name}: optimizer', public(opt))
  report.value(f'{name}: dict', list(model.extra))

model = Model()
nnx.grad(lambda m: m(x).sum())(model)
with report.printed('repr after grad'):
  print(model)
