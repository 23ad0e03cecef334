"""Texts of the tree-mode (graph=False) errors, and small graph-API
behaviours met next to them (values settled against Flax 0.12.8)."""

import jax.numpy as jnp
import pytest
from flax import nnx


def _options(fn_name):
  return (
    'Consider the following options:\n\n'
    '1. Remove the duplicates and guarantee a tree structure.\n'
    f'2. Enable graph mode by passing graph=True to {fn_name} e.g.\n\n'
    f'  nnx.{fn_name}(..., graph=True)\n\n'
    f'3. Use nnx.compat.{fn_name} instead e.g.\n\n'
    f'  nnx.compat.{fn_name}(...)'
  )


class Foo(nnx.Pytree):
  def __init__(self, value):
    self.a = nnx.data(value)


def _cycle():
  a = nnx.List([1])
  b = nnx.List([2, a])
  a.append(b)
  return a


@pytest.mark.parametrize(
  'name, fn',
  [
    ('iter_graph', lambda x: list(nnx.iter_graph(x, graph=False))),
    (
      'recursive_map',
      lambda x: nnx.recursive_map(lambda p, v: v, x, graph=False),
    ),
  ],
)
def test_cycle_and_duplicate_messages(name, fn):
  with pytest.raises(ValueError) as info:
    fn(_cycle())
  assert str(info.value) == (
    'Cycle detected for List\nfound at paths:\n\n  - \n  - 1/1\n\n'
    'Cycles are not supported with graph=False. ' + _options(name)
  )
  v = nnx.Param(jnp.ones(1))
  with pytest.raises(ValueError) as info:
    fn(Foo([v, {'x': v}]))
  assert str(info.value) == (
    f'Duplicate {v!r}\nfound at paths:\n\n  - a/0\n  - a/1/x\n\n'
    'Tree mode (graph=False) does not support shared references. '
    + _options(name)
  )


def test_split_duplicates_and_pytree_false_messages():
  v = nnx.Param(jnp.ones(1))
  with pytest.raises(ValueError) as info:
    nnx.split(Foo([v, {'x': v}]), graph=False)
  assert str(info.value) == (
    f"Duplicate {v!r}\nfound at paths:\n\n  - .a[0]\n  - .a[1]['x']\n\n"
    'Tree mode (graph=False) does not support shared references. '
    + _options('split')
  )

  class Opaque(nnx.Pytree, pytree=False):
    pass

  holder = Foo(Opaque())
  for name, fn, path in [
    ('iter_graph', lambda: list(nnx.iter_graph(holder, graph=False)), 'a'),
    ('flatten', lambda: nnx.split(holder, graph=False), '.a'),
  ]:
    with pytest.raises(ValueError) as info:
      fn()
    assert str(info.value) == (
      f"Cannot use '{name}' with graph=False on a 'Opaque' instance that has "
      f'pytree=False. Found at path: {path}. Pytree subclasses with '
      'pytree=False are not registered as JAX pytrees and cannot be used in '
      'tree-mode. ' + _options(name)
    )
  # iter_children looks at the direct children only
  assert [k for k, _ in nnx.iter_children(holder, graph=False)] == ['a']
  assert len(list(nnx.iter_children(_cycle(), graph=False))) == 1


@pytest.mark.parametrize('graph', [True, False])
def test_leaf_root_flat_state_merges_back(graph):
  x = jnp.array(1.0)
  graphdef, flat_state = nnx.graphlib.flatten(x, graph=graph)
  assert flat_state[0][1] is x
  assert nnx.merge(graphdef, flat_state) is x


def test_variable_construction_and_set_value():
  with pytest.raises(TypeError) as info:
    nnx.Param()
  assert str(info.value) == (
    "Variable.__init__() missing 1 required positional argument: 'value'"
  )
  v = nnx.Param(jnp.ones(1))
  other = nnx.Param(jnp.zeros(1))
  v.set_value(other)  # stored as it is, as Flax 0.12.8 does
  assert v.get_raw_value() is other
  w = nnx.Param(jnp.ones(1))
  w[...] = other  # indexing writes take the value
  assert not isinstance(w.get_raw_value(), nnx.Variable)
