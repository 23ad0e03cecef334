"""Lifted transforms of ``functools.partial`` of a Module class (and of
partials of partials): the class is lifted, the partial re-applied."""

import functools

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class Block(nn.Module):
  features: int
  scale: float = 1.0

  @nn.compact
  def __call__(self, x):
    return nn.Dense(self.features)(x) * self.scale

  def other(self, x):
    return self(x) + 1


class ScanBlock(nn.Module):
  features: int

  @nn.compact
  def __call__(self, c, x):
    return nn.Dense(self.features)(c) + x, c


P = functools.partial(Block, features=4)
PP = functools.partial(functools.partial(Block, scale=2.0), features=4)
x = jnp.ones((3, 2, 4))


def run(name, lifted, *args):
  class Outer(nn.Module):
    @nn.compact
    def __call__(self, *a):
      return lifted(name='inner')(*a)

  variables = Outer().init(jax.random.key(0), *args)
  report.tree(f'{name} variables', variables)
  report.tree(f'{name} out', Outer().apply(variables, *args))
  report.text(f'{name} type', type(lifted).__name__)


vmap_kw = dict(variable_axes={'params': 0}, split_rngs={'params': True})
run('vmap', nn.vmap(P, in_axes=0, **vmap_kw), x)
run('vmap nested partial', nn.vmap(PP, in_axes=0, **vmap_kw), x)
run('jit', nn.jit(P), x)
run('remat', nn.remat(P), x)
run('checkpoint nested partial', nn.checkpoint(PP), x)
run(
  'scan',
  nn.scan(
    functools.partial(ScanBlock, features=4),
    variable_broadcast='params',
    split_rngs={'params': False},
    in_axes=0,
  ),
  jnp.ones((2, 4)),
  x,
)
run('map_variables', nn.map_variables(P, 'params', lambda t: t, init=True), x)
run('fold_rngs', nn.fold_rngs(P), x)

PK = functools.partial(
  functools.partial(Block, features=4, scale=2.0), scale=3.0
)
ones = {
  'params': {'Dense_0': {'kernel': jnp.ones((4, 4)), 'bias': jnp.zeros(4)}}
}
report.array('outer keyword wins', nn.jit(PK)().apply(ones, jnp.ones((1, 4))))
report.tree(
  'override at call',
  nn.jit(PP)(features=3).init(jax.random.key(0), x),
)
report.tree(
  'methods',
  nn.jit(P, methods=['other'])().init(jax.random.key(0), x, method='other'),
)
report.tree(
  'remat_scan',
  nn.remat_scan(functools.partial(Block, 4), lengths=(2,))().init(
    jax.random.key(0), jnp.ones((1, 4))
  ),
)
report.text('repr', repr(nn.jit(P)()))
with report.raises('partial has no __name__'):
  nn.jit(P).__name__
