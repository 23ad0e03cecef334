"""A custom pytree held by an nnx.data attribute: its array leaves are
state, its other leaves (functions, flags, numbers) stay in the graph
definition, so nnx.jit / nnx.split see only arrays (as Flax 0.12.8)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Spec:
  t1: bool
  steps: int
  fn: object


class M(nnx.Module):
  def __init__(self, spec, extra=None):
    self.w = nnx.Param(jnp.arange(3.0))
    self.spec = nnx.data(spec)
    self.extra = nnx.data(extra)


def run(m, x):
  y = x * m.w
  for _ in range(m.spec.steps):
    y = m.spec.fn(y)
  return y


def _paths(state):
  return ['/'.join(map(str, p)) for p, _ in nnx.to_flat_state(state)]


def test_nnx_jit_sees_only_arrays():
  out = nnx.jit(run)(M(Spec(True, 2, jnp.sin)), jnp.ones(3))
  np.testing.assert_allclose(
    out, [0.0, 0.7456241250038147, 0.7890723347663879], rtol=1e-6
  )


def test_split_state_and_merge_roundtrip():
  m = M(Spec(True, 2, jnp.sin))
  graphdef, state = nnx.split(m)
  assert _paths(state) == ['w']
  assert _paths(nnx.state(m)) == ['w']
  m2 = nnx.merge(graphdef, state)
  assert m2.spec == m.spec
  assert nnx.graphdef(M(Spec(True, 2, jnp.sin))) == graphdef
  assert nnx.graphdef(M(Spec(True, 3, jnp.sin))) != graphdef


def test_tree_mode_state_keeps_every_leaf():
  _, state = nnx.split(M(Spec(True, 2, jnp.sin)), graph=False)
  assert _paths(state) == ['spec/fn', 'spec/steps', 'spec/t1', 'w']


@pytest.mark.parametrize(
  'value, paths',
  [
    (Spec(True, jnp.array(2), jnp.sin), ['extra/steps', 'w']),
    ((1, jnp.ones(2), 'a'), ['extra/1', 'w']),
    ([True, 2.0, jnp.zeros(1)], ['extra/2', 'w']),
    ({'b': 1, 'a': jnp.ones(1), 'c': 'x'}, ['extra/a', 'w']),
    ((1, 2), ['w']),
    ([Spec(False, 1, None), {'q': (3, jnp.ones(1))}], ['extra/1/q/1', 'w']),
    (3, ['extra', 'w']),
    (jnp.sin, ['extra', 'w']),
  ],
)
def test_mixed_leaves_under_nnx_data(value, paths):
  m = M(Spec(True, 2, jnp.sin), value)
  assert _paths(nnx.state(m)) == paths


def test_transforms_and_updates():
  m = M(Spec(True, 2, jnp.sin), (1, jnp.ones(3), 'a'))

  def f(m, x):
    return run(m, x) + m.extra[1]

  expected = np.asarray(f(m, jnp.ones(3)))
  np.testing.assert_allclose(nnx.jit(f)(m, jnp.ones(3)), expected, rtol=1e-6)
  ys = nnx.vmap(f, in_axes=(None, 0))(m, jnp.ones((2, 3)))
  np.testing.assert_allclose(ys, np.stack([expected] * 2), rtol=1e-6)
  grads = nnx.grad(lambda m, x: f(m, x).sum())(m, jnp.ones(3))
  assert _paths(grads) == ['w']

  @nnx.jit
  def update(m):
    m.w[...] += 1.0
    m.spec = Spec(False, 1, jnp.cos)

  update(m)
  assert m.spec == Spec(False, 1, jnp.cos)
  np.testing.assert_array_equal(m.w[...], [1.0, 2.0, 3.0])
