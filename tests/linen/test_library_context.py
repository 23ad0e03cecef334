"""Linen's per-thread context as code built on Linen reads it
(``flax.linen.module._context``)."""

import jax
import jax.numpy as jnp
from flax import linen as nn
from linen_test_layers import Dense
from flax.linen import module as module_lib


def test_context_is_the_dynamic_context_object():
  ctx = module_lib._context
  assert type(ctx).__name__ == '_DynamicContext'
  assert isinstance(ctx, module_lib._DynamicContext)
  assert ctx.module_stack == [None]
  assert ctx.capture_stack == []
  assert ctx.call_info_stack == []


def test_module_stack_top_is_the_running_module():
  found = []

  def library_fn(x):
    mdl = module_lib._context.module_stack[-1]
    found.append((mdl.name, mdl.scope.path))
    return x * mdl.variable('quant', 'scale', lambda: jnp.full((), 2.0)).value

  class Layer(nn.Module):
    @nn.compact
    def __call__(self, x):
      return library_fn(x)

  class Net(nn.Module):
    @nn.compact
    def __call__(self, x):
      return Layer(name='a')(Layer()(x))

  y, variables = Net().init_with_output(jax.random.key(0), jnp.ones(2))
  assert found == [('Layer_0', ('Layer_0',)), ('a', ('a',))]
  assert jax.tree.map(jnp.shape, variables) == {
    'quant': {'Layer_0': {'scale': ()}, 'a': {'scale': ()}}
  }
  assert y.tolist() == [4.0, 4.0]
  assert module_lib._context.module_stack == [None]


def test_module_built_while_another_is_on_the_stack_is_adopted():
  class Outer(nn.Module):
    @nn.compact
    def __call__(self, x):
      assert module_lib._context.module_stack[-1] is self
      inner = Dense(2)
      assert inner.parent is self
      return inner(x)

  variables = Outer().init(jax.random.key(1), jnp.ones((1, 4)))
  assert jax.tree.map(jnp.shape, variables) == {
    'params': {'Dense_0': {'bias': (2,), 'kernel': (4, 2)}}
  }


def test_module_helpers_libraries_import():
  class Foo(nn.Module):
    features: int = 3
    act: object = jax.nn.relu

  assert module_lib._get_unspecified_parent() is module_lib._unspecified_parent
  assert module_lib._sorted_items({'b': 1, 'a': 2}) == [('a', 2), ('b', 1)]
  assert module_lib._attr_repr(Foo) == 'Foo'
  assert module_lib._attr_repr(jax.nn.relu) == 'relu'
  assert module_lib._attr_repr('s') == "'s'"
  assert module_lib._module_repr(Foo()) == repr(Foo())
  assert module_lib._module_repr(Foo(), 2) == (
    'Foo(\n  # attributes\n  features = 3\n  act = relu\n)'
  )


def test_module_pushed_on_the_stack_becomes_the_parent():
  def make_under(parent, cls, *args, **kwargs):
    stack = module_lib._context.module_stack
    stack.append(parent)
    try:
      return cls(*args, **kwargs)
    finally:
      stack.pop()

  class Net(nn.Module):
    @nn.compact
    def __call__(self, x):
      helper = make_under(self, Dense, 5, name='injected')
      assert helper.parent is self
      return helper(x)

  variables = Net().init(jax.random.key(0), jnp.ones((1, 3)))
  assert jax.tree.map(jnp.shape, variables) == {
    'params': {'injected': {'bias': (5,), 'kernel': (3, 5)}}
  }
  assert make_under(None, Dense, 2).parent is None
