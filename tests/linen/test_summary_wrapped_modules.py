"""FLOPs of a Module that calls a Module bound elsewhere in the tree.

A wrapper holding, in a field, a Module created by its parent (as
``WeightNorm`` holds the layer it normalizes) uses variables outside its
own subtree. Its FLOPs replay takes them too, and its VJP FLOPs count the
gradient with respect to them (as Flax 0.12.8).
"""

import jax
import jax.numpy as jnp

from flax import linen as nn
from flax.linen import summary


class Dense(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    shape = (x.shape[-1], self.features)
    return x @ self.param('kernel', jax.nn.initializers.ones, shape)


class Wrap(nn.Module):
  inner: nn.Module

  @nn.compact
  def __call__(self, x):
    return jnp.sin(self.inner(x))


class DoubledWrap(nn.Module):
  """Calls ``inner`` with its kernel doubled (``nn.map_variables``)."""

  inner: nn.Module

  @nn.compact
  def __call__(self, x):
    double = lambda v: jax.tree_util.tree_map(lambda a: a * 2, v)  # noqa: E731
    call = nn.map_variables(
      lambda m, x: m(x), 'params', trans_in_fn=double,
      init=self.is_initializing(),
    )  # fmt: skip
    return jnp.sin(call(self.inner, x))


class Outer(nn.Module):
  wrapped: nn.Module

  @nn.compact
  def __call__(self, x):
    return self.wrapped(x) * 2


class Model(nn.Module):
  kind: str

  @nn.compact
  def __call__(self, x):
    dense = Dense(3)
    if self.kind == 'wrap':
      return Wrap(dense)(x)
    if self.kind == 'map_variables':
      return DoubledWrap(dense)(x)
    return Outer(Wrap(dense))(x)


def _plain_flops(fn, *args):
  return int(jax.jit(fn).lower(*args).cost_analysis()['flops'])


def _with_variables_vjp(fn):
  # The VJP column pulls back the output together with the variables.
  def vjp(k, x):
    y, bwd = jax.vjp(lambda k, x: (fn(k, x), k), k, x)
    return bwd(y)

  return vjp


def _rows(kind, x):
  table = summary._get_module_table(
    Model(kind), depth=None, show_repeated=False, compute_flops=True,
    compute_vjp_flops=True,
  )(jax.random.key(0), x)  # fmt: skip
  return {r.path: (r.flops, r.vjp_flops) for r in table}


def test_wrapper_replay_takes_the_wrapped_module_variables():
  x = jnp.ones((1, 2))
  k = jnp.ones((2, 3))
  wrap = lambda k, x: jnp.sin(x @ k)  # noqa: E731
  rows = _rows('wrap', x)
  expected = (
    _plain_flops(wrap, k, x),
    _plain_flops(_with_variables_vjp(wrap), k, x),
  )
  assert rows[('Wrap_0',)] == expected
  # The gradient with respect to the Dense kernel is counted.
  assert rows[('Wrap_0',)][1] > rows[('Dense_0',)][1]


def test_map_variables_wrapper_replay():
  x = jnp.ones((1, 2))
  k = jnp.ones((2, 3))
  wrap = lambda k, x: jnp.sin(x @ (k * 2))  # noqa: E731
  rows = _rows('map_variables', x)
  assert rows[('DoubledWrap_0',)] == (
    _plain_flops(wrap, k, x),
    _plain_flops(_with_variables_vjp(wrap), k, x),
  )


def test_wrapper_inside_a_field_of_a_field():
  x = jnp.ones((1, 2))
  rows = _rows('nested', x)
  assert rows[('Wrap_0',)] == _rows('wrap', x)[('Wrap_0',)]
  assert rows[('Outer_0',)][0] > rows[('Wrap_0',)][0]
  assert rows[('Outer_0',)][1] > rows[('Wrap_0',)][1]
