"""When ``setup`` runs around lifted transforms (counts as Flax 0.12.8).

Before a lifted transform reaches a Module whose ``setup`` has not run, it
runs ``setup`` once on a throwaway clone bound to an empty ``TestScope``
(abstractly); the clone bound inside the transform then runs it for real.
"""

import jax
import jax.numpy as jnp
import pytest

from flax import linen as nn
from flax.linen import module as module_lib


class Scale(nn.Module):
  @nn.compact
  def __call__(self, x):
    return x * self.param('w', jax.nn.initializers.ones, x.shape)


def _scope_kind(module):
  return 'test' if isinstance(module.scope, module_lib.TestScope) else 'real'


def _vmap(fn):
  return nn.vmap(
    fn, variable_axes={'params': None}, split_rngs={'params': False}
  )


@pytest.mark.parametrize('transform', [nn.remat, _vmap])
def test_each_transformed_method_call_checks_setup_first(transform):
  log = []

  class Inner(nn.Module):
    def setup(self):
      log.append(_scope_kind(self))
      self.scale = Scale()

    @transform
    def foo(self, x):
      return self.scale(x)

    @transform
    def bar(self, x):
      return self.scale(x)

  class Outer(nn.Module):
    def setup(self):
      self.inner = Inner()

    def __call__(self, x):
      return self.inner.foo(x), self.inner.bar(x)

  x = jnp.ones((1, 2))
  variables = Outer().init(jax.random.key(0), x)
  # The Module itself never runs setup outside: each call checks it again.
  assert log == ['test', 'real', 'test', 'real']
  log.clear()
  Outer().apply(variables, x)
  assert log == ['test', 'real', 'test', 'real']


def test_no_check_once_setup_ran_outside():
  log = []

  class Inner(nn.Module):
    def setup(self):
      log.append(_scope_kind(self))
      self.scale = Scale()

    def plain(self, x):
      return self.scale(x)

    @nn.remat
    def foo(self, x):
      return self.scale(x)

  class Outer(nn.Module):
    def setup(self):
      self.inner = Inner()

    def __call__(self, x):
      return self.inner.plain(x) + self.inner.foo(x)

  Outer().init(jax.random.key(0), jnp.ones(2))
  assert log == ['real', 'real']


def test_nested_transformed_modules_count_twice():
  n = 3
  counts = {'setup': 0, 'call': 0}

  class Leaf(nn.Module):
    def setup(self):
      counts['setup'] += 1
      self.scale = Scale()

    @nn.remat
    def __call__(self, x):
      counts['call'] += 1
      return self.scale(x)

  class Repeat(nn.Module):
    depth: int

    def setup(self):
      make = Leaf if self.depth == 0 else lambda: Repeat(self.depth - 1)
      self.layers = [make() for _ in range(n)]

    @nn.remat
    def __call__(self, x):
      for layer in self.layers:
        x = layer(x)
      return x

  Repeat(2).init(jax.random.key(0), jnp.ones(2))
  assert counts == {'setup': 2 * n**3, 'call': n**3}


def test_check_covers_field_and_argument_modules_in_order():
  log = []

  class Named(nn.Module):
    tag: str

    def setup(self):
      log.append((self.tag, _scope_kind(self), self.scope.path))

    def __call__(self, x):
      return x

  class Holder(nn.Module):
    sub: nn.Module

    def setup(self):
      log.append(('holder', _scope_kind(self), self.scope.path))

    @nn.remat
    def __call__(self, other, x):
      return other(self.sub(x))

  class Top(nn.Module):
    def setup(self):
      self.holder = Holder(Named('field'))
      self.other = Named('arg')

    def __call__(self, x):
      return self.holder(self.other, x)

  Top().init(jax.random.key(0), jnp.ones(2))
  assert log == [
    ('arg', 'test', ()),
    ('holder', 'test', ()),
    ('field', 'test', ()),
    ('holder', 'real', ('holder',)),
    ('field', 'real', ('holder', 'sub')),
    ('arg', 'real', ('other',)),
  ]


def test_check_runs_abstractly_and_touches_no_variables():
  seen = []

  class M(nn.Module):
    def setup(self):
      w = self.param('w', jax.nn.initializers.ones, (2,))
      seen.append(
        (
          _scope_kind(self),
          isinstance(w, jax.core.Tracer),
          self.is_initializing(),
        )
      )
      self.w = w

    @nn.remat
    def __call__(self, x):
      return x * self.w

  variables = M().init(jax.random.key(0), jnp.ones(2))
  assert seen[0] == ('test', True, False)
  assert jax.tree_util.tree_map(jnp.shape, variables) == {'params': {'w': (2,)}}


def test_interceptors_see_the_check():
  calls = []

  class M(nn.Module):
    @nn.remat
    @nn.compact
    def __call__(self, x):
      return Scale()(x)

  def interceptor(next_fun, args, kwargs, context):
    if context.module.scope is not None and not context.module.scope.path:
      calls.append((context.method_name, _scope_kind(context.module)))
    return next_fun(*args, **kwargs)

  with nn.intercept_methods(interceptor):
    M().init(jax.random.key(0), jnp.ones(2))
  assert calls == [('<lambda>', 'test'), ('__call__', 'real')]


def test_setup_errors_raise_before_the_transform():
  class Clash(nn.Module):
    def setup(self):
      self.a = Scale(name='x')
      self.b = Scale(name='x')

    @nn.remat
    def __call__(self, x):
      return self.a(x)

  with pytest.raises(Exception, match='Name in use'):
    Clash().init(jax.random.key(0), jnp.ones(2))
