"""nn.tabulate with lifted transforms (a jitted sibling served from the
cache shows in its parent's row), Python-number and empty inputs, reused
Modules, non-array variables, partitioned and map_variables parameters and
nested parameter dicts (indented)."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

kw = dict(console_kwargs={'width': 200, 'force_terminal': False})
ones = jax.nn.initializers.ones


class Dense(nn.Module):
  f: int = 2

  @nn.compact
  def __call__(self, x):
    return x @ self.param('kernel', ones, (x.shape[-1], self.f))


class JitVmap(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = nn.jit(Dense)(2)(x)
    vmapped = nn.vmap(
      Dense, variable_axes={'params': 0}, split_rngs={'params': True}
    )
    return vmapped(2)(x[None])[0]


class JitMethod(nn.Module):
  @nn.jit
  @nn.compact
  def __call__(self, x):
    return Dense(2)(x)


class Siblings(nn.Module):
  @nn.compact
  def __call__(self, x):
    for _ in range(2):
      x = JitMethod()(x)
    return x


class Scalars(nn.Module):
  @nn.compact
  def __call__(self, x, n: int, s: float = 1.0):
    return Dense(2)(x) * n * s


class NoInputs(nn.Module):
  @nn.compact
  def __call__(self):
    return self.param('w', ones, (2,))


class Reused(nn.Module):
  @nn.compact
  def __call__(self, x):
    d = Dense(2)
    p = self.param('p', nn.with_partitioning(ones, (None, None)), (1, 2))
    return d(d(x)) * p


class NonArray(nn.Module):
  @nn.compact
  def __call__(self, x):
    self.variable('state', 'count', lambda: 0)
    self.variable('state', 'scale', lambda: 1.5)
    return x


class StringVariable(nn.Module):
  @nn.compact
  def __call__(self, x):
    self.variable('state', 'name', lambda: 'hello')
    return x


class Mapped(nn.Module):
  @nn.compact
  def __call__(self, x):
    double = lambda v: jax.tree_util.tree_map(lambda a: a * 2, v)  # noqa: E731
    return nn.map_variables(Dense, 'params', double, init=True)(2)(x)


class NestedParam(nn.Module):
  @nn.compact
  def __call__(self, x):
    self.param('p', lambda k: {'a': jnp.ones(2), 'b': {'c': jnp.ones(3)}})
    self.param('q', ones, (2,))
    return x


key = jax.random.key(0)
x = jnp.ones((1, 2))
report.text('jit and vmap', JitVmap().tabulate(key, x, **kw))
report.text('jit method', JitMethod().tabulate(key, x, **kw))
report.text('jit siblings', Siblings().tabulate(key, x, **kw))
report.text('python scalars', Scalars().tabulate(key, x, 3, s=2.0, **kw))
report.text('no inputs', NoInputs().tabulate(key, **kw))
report.text('reused and partitioned', Reused().tabulate(key, x, **kw))
report.text('non-array variables', NonArray().tabulate(key, x, **kw))
with report.raises('string variable'):
  StringVariable().tabulate(key, x, **kw)
report.text('map_variables', Mapped().tabulate(key, x, **kw))
report.text('nested param', NestedParam().tabulate(key, x, **kw))
