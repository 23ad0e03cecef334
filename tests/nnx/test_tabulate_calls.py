"""nnx.tabulate runs the methods of a model as often as Flax 0.12.8 does:
each distinct call (object, method, input shapes and other values) once,
a repeated one not again, and each call that makes a row once more when
the ``vjp_flops`` column is asked for (counts settled with Flax)."""

import collections

import jax.numpy as jnp
import pytest
from flax import nnx

MODES = {
  'plain': {},
  'flops': {'compute_flops': True},
  'vjp': {'compute_vjp_flops': True},
  'both': {'compute_flops': True, 'compute_vjp_flops': True},
}
X = jnp.ones((2, 3))
calls = collections.Counter()


class Leaf(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((3, 3)))
    self.count = nnx.BatchStat(jnp.array(0))

  def __call__(self, x, scale=1.0):
    calls['Leaf'] += 1
    self.count[...] += 1
    return x @ self.w[...] * scale

  def helper(self, x):
    calls['Leaf.helper'] += 1
    return self(x)


class Tree(nnx.Module):
  def __init__(self, depth):
    self.leaf = Leaf()
    self.kids = nnx.List([Tree(depth - 1) for _ in range(2)] if depth else [])

  def __call__(self, x):
    calls['Tree'] += 1
    y = self.leaf(x)
    for kid in self.kids:
      y = y + kid(x)
    return y


class Twice(nnx.Module):
  """Calls its leaf twice with inputs of the same shape."""

  def __init__(self):
    self.leaf = Leaf()

  def __call__(self, x):
    calls['Twice'] += 1
    return self.leaf(self.leaf(x))


class Helper(nnx.Module):
  """Its __call__ calls a method of its own with the same inputs."""

  def __init__(self):
    self.leaf = Leaf()

  def __call__(self, x):
    calls['Helper.call'] += 1
    return self.helper(x)

  def helper(self, x):
    calls['Helper.helper'] += 1
    return self.leaf(x)

  def encode(self, x):
    calls['Helper.encode'] += 1
    return self.leaf(x) * 2


class Shapes(nnx.Module):
  """Calls its own method with other inputs, and a leaf's method that
  calls the leaf."""

  def __init__(self):
    self.leaf = Leaf()

  def __call__(self, x):
    calls['Shapes.call'] += 1
    return self.helper(x[:1]) + self.leaf.helper(x[:1])

  def helper(self, x):
    calls['Shapes.helper'] += 1
    return self.leaf(x)


class Static(nnx.Module):
  """Calls its leaf with other shapes and static keyword values."""

  def __init__(self):
    self.leaf = Leaf()

  def __call__(self, x):
    calls['Static'] += 1
    y = self.leaf(x)
    y = self.leaf(y[:1])
    y = self.leaf(y, scale=2.0)
    y = self.leaf(y, scale=2.0)
    return self.leaf(y, scale=3.0)


FORWARD = {
  'tree': (lambda: Tree(2), {'Leaf': 7, 'Tree': 7}),
  'twice': (Twice, {'Leaf': 1, 'Twice': 1}),
  'helper': (Helper, {'Helper.call': 1, 'Helper.helper': 1, 'Leaf': 1}),
  'shapes': (
    Shapes,
    {'Leaf': 1, 'Leaf.helper': 1, 'Shapes.call': 1, 'Shapes.helper': 1},
  ),
}
BACKWARD = {
  'tree': {'Leaf': 14, 'Tree': 14},
  'twice': {'Leaf': 2, 'Twice': 2},
  'helper': {'Helper.call': 1, 'Helper.helper': 2, 'Leaf': 2},
  'shapes': {
    'Leaf': 2,
    'Leaf.helper': 1,
    'Shapes.call': 2,
    'Shapes.helper': 2,
  },
}


def _count(model, **kwargs):
  calls.clear()
  nnx.tabulate(model, X, console_kwargs={'width': 250}, **kwargs)
  return dict(calls)


@pytest.mark.parametrize('mode', list(MODES))
@pytest.mark.parametrize('name', list(FORWARD))
def test_calls_per_model(name, mode):
  make, forward = FORWARD[name]
  expected = BACKWARD[name] if 'vjp' in mode or mode == 'both' else forward
  assert _count(make(), **MODES[mode]) == expected


@pytest.mark.parametrize('mode', list(MODES))
def test_calls_of_another_method(mode):
  backward = mode in ('vjp', 'both')
  n = 2 if backward else 1
  counts = _count(Helper(), method='encode', **MODES[mode])
  assert counts == {'Helper.encode': n, 'Leaf': n}


@pytest.mark.parametrize('mode', ['plain', 'flops'])
def test_static_values_are_part_of_a_call(mode):
  assert _count(Static(), **MODES[mode]) == {'Leaf': 4, 'Static': 1}


@pytest.mark.parametrize(
  'kwargs', [{'depth': 0}, {'row_filter': lambda r: r.type is not Leaf}]
)
def test_depth_and_row_filter_do_not_change_the_calls(kwargs):
  assert _count(Tree(2), compute_vjp_flops=True, **kwargs) == {
    'Leaf': 14,
    'Tree': 14,
  }


def test_repeated_call_leaves_the_model_unchanged():
  model = Twice()
  table = nnx.tabulate(
    model, X, console_kwargs={'width': 250, 'force_terminal': False}
  )
  types = [
    line.split('│')[2].strip() for line in table.splitlines() if '│' in line
  ]
  assert [t for t in types if t] == ['Twice', 'Leaf']
  assert int(model.leaf.count[...]) == 0


class _Mat(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((3, 3)))

  def __call__(self, x):
    return x @ self.w[...]


class _Tied(nnx.Module):
  """Two attributes holding one module (its Param reached by two paths)."""

  def __init__(self, tied, same_input):
    self.l1 = _Mat()
    self.l2 = self.l1 if tied else _Mat()
    self.same_input = same_input

  def __call__(self, x):
    return self.l1(x) + self.l2(x if self.same_input else x * 2)


@pytest.mark.parametrize(
  'tied, same_input, vjp_flops',
  [
    (False, True, '228'),
    (False, False, '240'),
    # A Variable reached by two paths gets a gradient per path (no sum).
    (True, True, '228'),
    (True, False, '240'),
  ],
)
def test_vjp_flops_of_tied_modules(tied, same_input, vjp_flops):
  table = nnx.tabulate(
    _Tied(tied, same_input),
    X,
    compute_vjp_flops=True,
    console_kwargs={'width': 250, 'force_terminal': False},
  )
  root = next(
    line
    for line in table.splitlines()
    if line.startswith('│ ') and '_Tied' in line
  )
  assert root.split('│')[5].strip() == vjp_flops
