"""Classes registered with ``nnx.graph.register_graph_node_type``: split,
merge, state, update, pop, clone, iter_graph, find_duplicates and
GraphDef records handle them like Modules (behaviour of Flax 0.12.8)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx, struct
from flax.nnx import graph, graphlib


class Box:
  def __init__(self, **items):
    self.items = dict(items)


graph.register_graph_node_type(
  Box,
  flatten=lambda b: (sorted(b.items.items()), None),
  set_key=lambda b, k, v: b.items.__setitem__(k, v),
  pop_key=lambda b, k: b.items.pop(k),
  create_empty=lambda aux: Box(),
  clear=lambda b: b.items.clear(),
  init=lambda b, items: b.items.update(items),
)


class Tagged:
  """A node whose aux data (its tag) is kept in the GraphDef."""

  def __init__(self, tag, **items):
    self.tag = tag
    self.items = dict(items)


graph.register_graph_node_type(
  Tagged,
  flatten=lambda t: (sorted(t.items.items()), t.tag),
  set_key=lambda t, k, v: t.items.__setitem__(k, v),
  pop_key=lambda t, k: t.items.pop(k),
  create_empty=lambda tag: Tagged(tag),
  clear=lambda t: t.items.clear(),
  init=lambda t, items: t.items.update(items),
)


class M(nnx.Module):
  def __init__(self):
    self.box = Box(w=nnx.Param(jnp.ones(3)), a=jnp.zeros(2))
    self.shared = self.box.items['w']


def make_box():
  return Box(
    w=nnx.Param(jnp.ones(2)),
    c=nnx.BatchStat(jnp.zeros(1)),
    s=3,
    a=jnp.arange(2),
  )


def test_registered_type_is_a_graph_node():
  b = make_box()
  assert graph.is_graph_node(b) and graph.is_node(b)
  assert graph.is_node_type(Box)
  assert not graph.is_graph_node(object())


def test_split_records_and_merge():
  b = make_box()
  graphdef, state = nnx.split(b)
  root = graphdef.nodes[0]
  assert isinstance(root, graphlib.NodeDef)
  assert (root.type, root.index, root.num_attributes, root.metadata) == (
    Box,
    0,
    4,
    None,
  )
  assert [type(n).__name__ for n in graphdef.nodes] == [
    'NodeDef',
    'VariableDef',
    'VariableDef',
  ]
  assert graphdef.attributes == [
    ('a', graphlib.LeafAttr()),
    ('c', graphlib.NodeAttr()),
    ('s', graphlib.Static(3)),
    ('w', graphlib.NodeAttr()),
  ]
  assert list(state.keys()) == ['a', 'c', 'w']
  new = nnx.merge(graphdef, state)
  assert type(new) is Box and sorted(new.items) == ['a', 'c', 's', 'w']
  assert new.items['w'] is b.items['w'] and new.items['s'] == 3
  # The GraphDef is structural: equal for an equal box, and hashable.
  other = nnx.graphdef(make_box())
  assert other == graphdef and hash(other) == hash(graphdef)


def test_aux_data_is_kept():
  t = Tagged('enc', w=nnx.Param(jnp.ones(1)))
  graphdef, state = nnx.split(t)
  assert graphdef.nodes[0].metadata == 'enc'
  assert nnx.merge(graphdef, state).tag == 'enc'
  assert nnx.graphdef(Tagged('dec', w=nnx.Param(jnp.ones(1)))) != graphdef


def test_state_update_pop_clone():
  b = make_box()
  assert list(nnx.state(b, nnx.Param).keys()) == ['w']
  nnx.update(b, jax.tree.map(lambda x: x + 1, nnx.state(b)))
  np.testing.assert_array_equal(b.items['w'][...], [2.0, 2.0])
  np.testing.assert_array_equal(b.items['a'], [1, 2])
  c = nnx.clone(b)
  assert type(c) is Box and c.items['w'] is not b.items['w']
  assert c.items['s'] == 3
  popped = nnx.pop(b, nnx.BatchStat)
  assert list(popped.keys()) == ['c'] and sorted(b.items) == ['a', 's', 'w']


def test_inside_a_module_shared_references():
  m = M()
  graphdef, state = nnx.split(m)
  assert list(state['box'].keys()) == ['a', 'w']
  new = nnx.merge(graphdef, state)
  assert type(new.box) is Box and new.box.items['w'] is new.shared
  assert nnx.find_duplicates(m) == [[('box', 'w'), ('shared',)]]
  assert [p for p, _ in nnx.iter_graph(m)] == [
    ('box', 'a'),
    ('box', 'w'),
    ('box',),
    (),
  ]


def test_cached_views_see_changes_inside_the_node():
  m = M()
  assert list(nnx.state(m).keys()) == ['box']
  m.box.items['n'] = nnx.BatchStat(jnp.ones(1))
  assert list(nnx.state(m, nnx.BatchStat)['box'].keys()) == ['n']
  nnx.update(m, {'box': {'a': jnp.full(2, 7.0)}})
  np.testing.assert_array_equal(m.box.items['a'], [7.0, 7.0])


def test_jit_updates_a_module_holding_the_node():
  m = M()

  @nnx.jit
  def f(m):
    m.box.items['w'][...] += 1
    m.box.items['a'] = m.box.items['a'] + 1

  f(m)
  np.testing.assert_array_equal(m.box.items['w'][...], [2.0, 2.0, 2.0])
  np.testing.assert_array_equal(m.box.items['a'], [1.0, 1.0])


def test_in_a_list_and_tree_mode():
  boxes = [Box(x=nnx.Param(jnp.zeros(1)))]
  graphdef, state = nnx.split(boxes)
  assert list(state[0].keys()) == ['x']
  assert type(nnx.merge(graphdef, state)[0]) is Box
  # Not a JAX pytree: jax.tree functions see one leaf.
  assert jax.tree.leaves(boxes[0]) == [boxes[0]]


def test_registration_errors():
  with pytest.raises(ValueError, match='already a graph node type'):
    graph.register_graph_node_type(M, *([None] * 6))
  with pytest.raises(TypeError, match='expects a class'):
    graph.register_graph_node_type(Box(), *([None] * 6))


def test_graphdef_from_records_and_pickle():
  import pickle

  b = make_box()
  graphdef, state = nnx.split(b)
  rebuilt = graphlib.GraphDef(
    graphdef.nodes, graphdef.attributes, graphdef.num_leaves
  )
  assert rebuilt == graphdef
  assert type(nnx.merge(rebuilt, state)) is Box
  assert pickle.loads(pickle.dumps(graphdef)) == graphdef


def test_jit_takes_a_registered_node_as_an_argument():
  box = Box(w=nnx.Param(jnp.ones(2)), c=nnx.BatchStat(jnp.zeros(1)))

  @nnx.jit
  def step(b, x):
    b.items['w'][...] = b.items['w'][...] * x
    b.items['c'][...] += 1
    return b.items['w'][...].sum()

  assert float(step(box, 2.0)) == 4.0
  assert float(step(box, 3.0)) == 12.0
  np.testing.assert_allclose(box.items['w'][...], [6.0, 6.0])
  np.testing.assert_allclose(box.items['c'][...], [2.0])
  assert sorted(box.items) == ['c', 'w']


def test_flatten_pytree_one_level_by_key():
  @struct.dataclass
  class Pair:
    a: tuple
    name: str = struct.field(pytree_node=False)

  items, indexes = graphlib._flatten_pytree(Pair((1, 2), 'p'))
  assert items == [('a', (1, 2))]  # one level; static fields left out
  assert isinstance(indexes, graphlib.IndexesPytreeDef)
  assert dict(indexes.key_index) == {'a': 0}
  assert graphlib._unflatten_pytree([('a', 3)], indexes) == Pair(3, 'p')
  # children are placed by key, whatever their order
  items, indexes = graphlib._flatten_pytree({'x': 1, 'y': [2]})
  assert graphlib._unflatten_pytree([('y', 5), ('x', 4)], indexes) == {
    'x': 4,
    'y': 5,
  }
  with pytest.raises(KeyError):
    graphlib._unflatten_pytree([('z', 1), ('x', 2)], indexes)
  with pytest.raises(ValueError, match='Too few leaves'):
    graphlib._unflatten_pytree([('x', 1)], indexes)
  assert graphlib._flatten_pytree(None) == (
    [],
    graphlib.IndexesPytreeDef(
      graphlib.HashableMapping({}), jax.tree.structure(None)
    ),
  )
