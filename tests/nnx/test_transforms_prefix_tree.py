"""nnx.prefix in tree mode (a node-shaped prefix) and in graph mode (a
TreeState), and where each is accepted as a prefix of a transform."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from flax.nnx import extract
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

TREE_STATE_PHRASE = (
  '`TreeState` objects are only allowed as prefixes when `graph=True` and '
  '`graph_updates=False`'
)
NODE_PHRASE = 'Graph nodes are not allowed as prefixes when graph=True'
W_AXIS = {nnx.PathContains('w'): 0, ...: None}


class M(nnx.Module):
  def __init__(self, n=4):
    self.w = nnx.Param(jnp.arange(2.0 * n).reshape(n, 2))
    self.b = nnx.Param(jnp.ones(2))
    self.k = 3

  def __call__(self, x):
    return x * self.w + self.b


class Outer(nnx.Module):
  def __init__(self):
    self.inner = M()
    self.lst = nnx.List([nnx.BatchStat(jnp.zeros(1)), 5])
    self.c = nnx.Variable(jnp.zeros(3))
    self.arr = jnp.ones(2)


def test_tree_mode_prefix_has_the_shape_of_the_node():
  m = M()
  p = nnx.prefix(m, W_AXIS, graph=False)
  assert type(p) is M and p is not m
  assert p.w == 0 and p.b is None and p.k == 3
  assert type(m.w) is nnx.Param  # the node itself is left alone
  assert repr(p) == 'M(\n  b=None,\n  w=0,\n  k=3\n)'
  assert not hasattr(p, 'state') and not hasattr(p, 'graphdef')
  leaves = jax.tree_util.tree_leaves(p, is_leaf=lambda x: x is None)
  assert leaves == [None, 0]


def test_tree_mode_prefix_of_nested_nodes_and_plain_leaves():
  o = Outer()
  p = nnx.prefix([o, jnp.ones(3)], lambda path, x: path, graph=False)
  assert type(p) is list and p[1] == (1,)
  q = p[0]
  assert type(q) is Outer and type(q.inner) is M and type(q.lst) is nnx.List
  assert q.arr == (0, 'arr') and q.c == (0, 'c')
  assert q.inner.w == (0, 'inner', 'w') and q.inner.k == 3
  assert q.lst[0] == (0, 'lst', 0) and q.lst[1] == 5
  assert nnx.prefix(nnx.Param(jnp.ones(2)), {...: 0}, graph=False) == 0


def test_tree_mode_prefix_of_shared_variables():
  class S(nnx.Module):
    def __init__(self):
      self.a = nnx.Param(jnp.ones(1))
      self.b = self.a

  p = nnx.prefix(S(), {...: 0}, graph=False)
  assert (p.a, p.b) == (0, 0)


def test_graph_mode_prefix_is_a_tree_state():
  p = nnx.prefix(M(), W_AXIS, graph=True)
  assert type(p) is extract.TreeState
  assert p.state == {'b': None, 'w': 0}
  with pytest.raises(
    AttributeError, match="'TreeState' object has no attribute 'w'"
  ):
    p.w
  v = nnx.prefix(nnx.Param(jnp.ones(2)), {...: 0}, graph=True)
  assert type(v) is extract.TreeState and v.state == 0


@pytest.mark.parametrize('graph', [True, False])
def test_prefix_as_in_axes_of_vmap_scan_and_pmap(graph):
  kw = dict(graph=graph, graph_updates=False)
  m = M()
  ax = nnx.prefix(m, W_AXIS, graph=graph)
  y = nnx.vmap(lambda m, x: m(x), in_axes=(ax, 0), **kw)(m, jnp.ones((4, 2)))
  np.testing.assert_allclose(y, [[1, 2], [3, 4], [5, 6], [7, 8]])

  f = nnx.scan(
    lambda c, m: (c + m.w[...] * m.b[...], c.sum()),
    in_axes=(nnx.Carry, ax),
    out_axes=(nnx.Carry, 0),
    **kw,
  )
  c, ys = f(jnp.zeros(2), m)
  np.testing.assert_allclose(c, [12.0, 16.0])
  np.testing.assert_allclose(ys, [0.0, 1.0, 6.0, 15.0])

  m8 = M(8)
  ax8 = nnx.prefix(m8, W_AXIS, graph=graph)
  g = nnx.pmap(lambda m, x: m.w[...] * x + m.b[...], in_axes=(ax8, 0), **kw)
  np.testing.assert_allclose(g(m8, jnp.ones((8, 2))), m8.w[...] + 1)


@pytest.mark.parametrize('graph', [True, False])
def test_prefix_as_shardings_and_specs(graph):
  kw = dict(graph=graph, graph_updates=False)
  mesh = jax.make_mesh((8,), ('d',))
  sh = nnx.prefix(M(), {...: NamedSharding(mesh, P())}, graph=graph)
  out = nnx.jit(M, out_shardings=sh, **kw)()
  assert out.w.sharding.spec == P()
  np.testing.assert_allclose(out.w[...], M().w[...])

  m = M(8)
  sp = nnx.prefix(m, {...: P()}, graph=graph)
  g = nnx.shard_map(
    lambda m, x: x + m.b[...].sum() + m.w[...].sum(),
    mesh=mesh,
    in_specs=(sp, P('d')),
    out_specs=P('d'),
    **kw,
  )
  x = jax.device_put(jnp.zeros(8), NamedSharding(mesh, P('d')))
  np.testing.assert_allclose(g(m, x), np.full(8, 122.0))


def _transforms(ax):
  mesh = jax.make_mesh((8,), ('d',))
  return {
    'vmap in_axes': lambda kw: nnx.vmap(lambda m, x: x, in_axes=(ax, 0), **kw),
    'vmap out_axes': lambda kw: nnx.vmap(lambda m: m, out_axes=ax, **kw),
    'scan in_axes': lambda kw: nnx.scan(
      lambda c, m: (c, 0), in_axes=(nnx.Carry, ax), **kw
    ),
    'pmap in_axes': lambda kw: nnx.pmap(lambda m, x: x, in_axes=(ax, 0), **kw),
    'shard_map in_specs': lambda kw: nnx.shard_map(
      lambda m: 0, mesh=mesh, in_specs=(ax,), out_specs=P(), **kw
    ),
    'jit out_shardings': lambda kw: nnx.jit(lambda: 0, out_shardings=ax, **kw),
  }


@pytest.mark.parametrize(
  'name', sorted(_transforms(None)), ids=lambda n: n.replace(' ', '_')
)
def test_where_each_kind_of_prefix_is_refused(name):
  m = M()
  # a TreeState: refused with graph updates and in tree mode
  make = _transforms(nnx.prefix(m, {...: None}, graph=True))[name]
  for kw in (dict(graph=True, graph_updates=True), dict(graph=False)):
    with pytest.raises(ValueError, match='Found `TreeState` object at path'):
      make(kw)
    with pytest.raises(ValueError, match=TREE_STATE_PHRASE):
      make(kw)
  # a node-shaped prefix: refused in graph mode
  make = _transforms(nnx.prefix(m, {...: None}, graph=False))[name]
  for kw in (
    dict(graph=True, graph_updates=True),
    dict(graph=True, graph_updates=False),
  ):
    with pytest.raises(ValueError, match='Found graph node of type M at path'):
      make(kw)
    with pytest.raises(ValueError, match=NODE_PHRASE):
      make(kw)


def _made(x):
  m = M()
  m.w = nnx.Param(x * 2)
  m.b = nnx.Param(x[0])
  return m


@pytest.mark.parametrize('graph', [True, False])
def test_prefix_as_scan_out_axes(graph):
  kw = dict(graph=graph, graph_updates=False)
  p = nnx.prefix(M(), {...: 0}, graph=graph)
  _, out = nnx.scan(
    lambda c, x: (c, _made(x)),
    in_axes=(nnx.Carry, 0),
    out_axes=(nnx.Carry, p),
    **kw,
  )(0.0, jnp.arange(8.0).reshape(4, 2))
  assert type(out) is M
  np.testing.assert_allclose(out.w[...], np.arange(8.0).reshape(4, 2) * 2)
  np.testing.assert_allclose(out.b[...], [0.0, 2.0, 4.0, 6.0])


@pytest.mark.parametrize(
  'graph, where',
  [(True, "out_axes[1].__state__['b']"), (False, 'out_axes[1].b')],
)
def test_scan_out_axes_prefix_with_none_is_refused(graph, where):
  p = nnx.prefix(M(), {nnx.PathContains('w'): 0, ...: None}, graph=graph)
  with pytest.raises(ValueError, match='Cannot broadcast output state') as e:
    nnx.scan(
      lambda c, x: (c, _made(x)),
      in_axes=(nnx.Carry, 0),
      out_axes=(nnx.Carry, p),
      graph=graph,
      graph_updates=False,
    )
  assert f'Got out_axes=None at: {where};' in str(e.value)


@pytest.mark.parametrize('graph', [True, False])
def test_prefix_as_shard_map_out_specs(graph):
  kw = dict(graph=graph, graph_updates=False)
  mesh = jax.make_mesh((8,), ('d',))
  m = M(8)
  out = nnx.shard_map(
    lambda m: M(8),
    mesh=mesh,
    in_specs=(nnx.prefix(m, {...: P()}, graph=graph),),
    out_specs=nnx.prefix(M(8), {...: P()}, graph=graph),
    **kw,
  )(m)
  assert type(out) is M and out.w.shape == (8, 2)
  np.testing.assert_allclose(out.w[...], M(8).w[...])


@pytest.mark.parametrize('graph', [True, False])
def test_shard_map_without_updates_writes_back_changed_values_only(graph):
  class C(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.arange(16.0).reshape(8, 2))
      self.c = nnx.BatchStat(jnp.zeros(8))

  def f(m):
    m.c[...] = m.c[...] + 1
    return m.w[...].sum()

  m = C()
  w0, c0 = m.w[...], m.c[...]
  mesh = jax.make_mesh((8,), ('d',))
  nnx.shard_map(
    f,
    mesh=mesh,
    in_specs=(P(),),
    out_specs=P(),
    graph=graph,
    graph_updates=False,
  )(m)
  assert m.w[...] is w0 and not w0.committed
  assert m.c[...] is not c0 and m.c[...].sharding.spec == P()
  np.testing.assert_allclose(m.c[...], np.ones(8))


@pytest.mark.parametrize(
  'axes, message',
  [
    (
      {nnx.Param: 0, ...: None},
      'Cannot broadcast output state. Got '
      'StateAxes({Ellipsis: None}) at: out_axes[1]',
    ),
    (
      {nnx.Param: nnx.Carry, ...: None},
      'Cannot carry output state. Got '
      "StateAxes({<class 'flax.nnx.variablelib.Param'>: Carry}) at: "
      'out_axes[1]',
    ),
    ({...: 0}, None),
  ],
)
def test_scan_out_state_axes_stack_every_substate(axes, message):
  def make():
    return nnx.scan(
      lambda c, x: (c, x),
      in_axes=(nnx.Carry, 0),
      out_axes=(nnx.Carry, nnx.StateAxes(axes)),
      graph=True,
      graph_updates=True,
    )

  if message is None:
    make()
    return
  with pytest.raises(ValueError) as e:
    make()
  assert str(e.value).startswith(message)
  # refused before the Carry pairing is checked
  with pytest.raises(ValueError, match='output state'):
    nnx.scan(lambda x: x, in_axes=(nnx.Carry, 0), out_axes=nnx.StateAxes(axes))


def test_graph_mode_prefix_of_a_shared_node_is_a_reference():
  m = M()
  first, again = nnx.prefix((m, m), W_AXIS, graph=True)
  assert dict(first.state) == {'b': None, 'w': 0}
  assert len(again.state) == 0  # reached again: no Variables of its own

  # the shared node crosses vmap once, under the first prefix
  f = nnx.vmap(
    lambda a, b, x: a(x) + b(x),
    in_axes=(first, again, None),
    graph=True,
    graph_updates=False,
  )
  np.testing.assert_allclose(f(m, m, 1.0), 2 * (m.w[...] + m.b[...][None]))

  @nnx.vmap(
    out_axes=(first, again), axis_size=3, graph=True, graph_updates=False
  )
  def make():
    new = M()
    return new, new

  a, b = make()
  assert a is b and a.w.shape == (3, 4, 2)


def test_vmap_without_updates_checks_shared_variables_by_their_paths():
  v = nnx.Param(jnp.ones((2, 2)))
  pair = nnx.Dict(x=v, y=nnx.Param(jnp.ones((2, 2))))
  other = nnx.Dict(z=v)
  # a prefix function gives the shared Variable 0 in `pair` and 1 in
  # `other` (where the prefix itself lists only what it reaches first)
  p1, p2 = nnx.prefix(
    (pair, other), lambda path, x: 1 if path[-1] == 'z' else 0, graph=True
  )
  assert len(p2.state) == 0
  f = nnx.vmap(
    lambda a, b: a['x'] + b['z'], in_axes=(p1, p2), graph_updates=False
  )
  with pytest.raises(
    ValueError,
    match=r'Inconsistent aliasing detected(.|\n)*0/0/x: 0\n  0/1/z: 1',
  ):
    f(pair, other)
  with pytest.raises(ValueError, match=r'0/1/x: 0\n  0/2/z: 1'):
    nnx.vmap(lambda n, a, b: a['x'], in_axes=(None, 0, 1), graph_updates=False)(
      jnp.ones(2), pair, other
    )
