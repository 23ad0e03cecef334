"""nn.tabulate with Modules called through several methods: one row per
Module (its first call, `Cls (method)` when not __call__), all calls with
show_repeated, own parameters without those of submodules made later."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class Lin(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    k = self.param(
      'kernel', jax.nn.initializers.lecun_normal(), (x.shape[-1], self.features)
    )
    return x @ k


class Child(nn.Module):
  @nn.compact
  def __call__(self, x):
    return self.helper(Lin(3, name='a')(x))

  def helper(self, x):
    return x * 2

  @nn.compact
  def encode(self, x):
    return Lin(2, name='e')(x)


class Parent(nn.Module):
  @nn.compact
  def __call__(self, x):
    c = Child(name='child')
    return c.encode(c(x))


class EncodeFirst(nn.Module):
  @nn.compact
  def __call__(self, x):
    c = Child(name='child')
    return c(c.encode(x)[:, :1] * jnp.ones((1, 3)))


x = jnp.ones((1, 3))
kw = dict(console_kwargs={'width': 150, 'force_terminal': False})
report.text('parent', nn.tabulate(Parent(), jax.random.key(0), **kw)(x))
report.text(
  'repeated',
  nn.tabulate(Parent(), jax.random.key(0), show_repeated=True, **kw)(x),
)
report.text(
  'encode first', nn.tabulate(EncodeFirst(), jax.random.key(0), **kw)(x)
)
