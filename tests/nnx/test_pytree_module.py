"""Pytree data/static rules, nnx.dataclass, containers and Module helpers
(expected values are Flax 0.12.8's)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx


def _paths(tree):
  return [
    (jax.tree_util.keystr(p), np.asarray(v).tolist())
    for p, v in jax.tree_util.tree_leaves_with_path(tree)
  ]


# -- data / static ---------------------------------------------------------------


def test_data_and_static_return_dataclass_fields():
  f = nnx.data(1)
  assert isinstance(f, dataclasses.Field)
  assert dict(f.metadata) == {'nnx_value': 1, 'static': False}
  g = nnx.static(2)
  assert dict(g.metadata) == {'nnx_value': 2, 'static': True}
  assert nnx.data().metadata['nnx_value'] is nnx.data().metadata['nnx_value']


def test_is_data_and_has_data():
  assert nnx.is_data(jnp.ones(1))
  assert nnx.is_data(np.ones(1))
  assert nnx.is_data(nnx.Param(1))
  assert nnx.is_data(nnx.Rngs(0))
  assert nnx.is_data(jax.random.key(0))
  assert nnx.is_data(jnp.float32(1))
  assert nnx.is_data(nnx.List([]))
  assert not nnx.is_data(1)
  assert not nnx.is_data(1.0)
  assert not nnx.is_data(np.float32(1))
  assert not nnx.is_data([jnp.ones(1)])
  assert not nnx.is_data('x')
  assert not nnx.is_data(None)
  found = nnx.has_data([1, jnp.ones(1), {'a': nnx.Param(2)}])
  assert len(found) == 2
  assert isinstance(found[1], nnx.Param)
  assert nnx.has_data(3) == []
  assert nnx.has_data((1, 2)) == []


def test_register_data_type():
  class Blob:
    pass

  assert not nnx.is_data(Blob())
  assert nnx.register_data_type(Blob) is Blob
  assert nnx.is_data(Blob())


class _A(nnx.Pytree):
  def __init__(self):
    self.z = jnp.ones(1)
    self.a = jnp.zeros(1)
    self.s = 1


def test_data_leaves_sorted_and_static_excluded():
  assert _paths(_A()) == [('.a', [0.0]), ('.z', [1.0])]


def test_static_attribute_rejects_array():
  a = _A()
  with pytest.raises(ValueError, match="static attribute 's'"):
    a.s = jnp.ones(1)
  with pytest.raises(ValueError, match="static attribute 'x'"):
    a.x = (1, jnp.ones(1))


def test_status_sticks_and_markers_override():
  a = _A()
  a.z = 'hello'  # a data attribute stays data
  assert _paths(a) == [('.a', [0.0]), ('.z', 'hello')]
  a.s = nnx.data(jnp.full(1, 2.0))  # explicit override of a static attr
  assert [p for p, _ in _paths(a)] == ['.a', '.s', '.z']
  a.z = nnx.static(2)
  assert [p for p, _ in _paths(a)] == ['.a', '.s']
  del a.s
  a.s = 'x'  # deleted: the status is decided afresh
  assert [p for p, _ in _paths(a)] == ['.a']
  a.w = nnx.data(3)
  assert _paths(a)[-1] == ('.w', 3)


def test_static_marker_with_array_raises():
  a = _A()
  with pytest.raises(ValueError, match=r'nnx\.static'):
    a.q = nnx.static(jnp.ones(1))


def test_annotations():
  class B(nnx.Pytree):
    x: nnx.Data[int]

    def __init__(self):
      self.x = 1

  assert jax.tree.leaves(B()) == [1]

  class C(nnx.Pytree):
    y: nnx.Static[jax.Array]

    def __init__(self):
      self.y = jnp.ones(1)

  # the check runs once __init__ has finished
  with pytest.raises(ValueError, match="static attribute 'y'"):
    C()

  class D(nnx.Pytree):
    x = nnx.data()

    def __init__(self):
      self.x = 5

  assert jax.tree.leaves(D()) == [5]
  assert repr(nnx.Data) == "typing.Annotated[~A, '__data__']"
  assert repr(nnx.Static) == "typing.Annotated[~A, '__static__']"


def test_check_pytree_finds_appended_data():
  class C(nnx.Pytree):
    def __init__(self):
      self.items = [1, 2]

  c = C()
  nnx.check_pytree(c)
  c.items.append(jnp.ones(1))
  with pytest.raises(ValueError, match="static attribute 'items'"):
    nnx.check_pytree(c)
  assert jax.tree.leaves(c) == []


def test_pytree_false_and_object_are_leaves():
  class D(nnx.Pytree, pytree=False):
    def __init__(self):
      self.items = [jnp.ones(1)]

  d = D()
  assert jax.tree.leaves(d) == [d]

  class Obj(nnx.Object):
    def __init__(self):
      self.items = [jnp.ones(1)]
      self.x = 1

  o = Obj()
  assert jax.tree.leaves(o) == [o]
  assert [c.__name__ for c in type(o).__mro__][:3] == [
    'Obj',
    'Object',
    'Pytree',
  ]
  with pytest.raises(ValueError, match='static attribute'):
    nnx.check_pytree(d)


# -- dataclasses -----------------------------------------------------------------


def test_nnx_dataclass():
  @nnx.dataclass
  class DC(nnx.Pytree):
    a: int
    b: jax.Array
    c: jax.Array = nnx.data(default=None)
    d: int = nnx.static(default=3)
    e: list = dataclasses.field(
      default_factory=list, metadata={'static': False}
    )

  dc = DC(1, jnp.ones(1))
  assert (dc.a, dc.c, dc.d, dc.e) == (1, None, 3, [])
  assert _paths(dc) == [('.b', [1.0])]
  assert DC(1, 2) == DC(1, 2)
  assert dataclasses.is_dataclass(dc)
  meta = {f.name: dict(f.metadata) for f in dataclasses.fields(DC)}
  assert meta['a'] == {} and meta['e'] == {'static': False}
  assert meta['d']['static'] is True


def test_plain_dataclass_static_metadata():
  @dataclasses.dataclass
  class DC2(nnx.Pytree):
    a: int = dataclasses.field(metadata={'static': False})
    b: jax.Array = dataclasses.field(default=None, metadata={'static': True})

  assert _paths(DC2(1)) == [('.a', 1)]
  with pytest.raises(ValueError, match="static attribute 'b'"):
    DC2(1, jnp.ones(1))


def test_nnx_dataclass_rejects_non_pytree():
  with pytest.raises(TypeError, match='nnx.Pytree'):

    @nnx.dataclass
    class Plain:
      x: int


# -- containers ----------------------------------------------------------------------


def test_list_container():
  xs = nnx.List([1, jnp.ones(2), nnx.Param(jnp.ones(3))])
  assert [
    (jax.tree_util.keystr(p), v.shape)
    for p, v in jax.tree_util.tree_leaves_with_path(xs)
  ] == [('[1]', (2,)), ('[2].value', (3,))]
  assert sorted(nnx.state(xs).keys()) == [1, 2]
  xs.append(jnp.zeros(1))
  assert len(xs) == 4
  assert xs[-1].tolist() == [0.0]
  assert type(xs[1:3]) is list and len(xs[1:3]) == 2
  xs.insert(0, 'first')
  assert xs[0] == 'first' and xs[1] == 1 and len(xs) == 5
  del xs[0]
  assert xs[0] == 1
  with pytest.raises(IndexError):
    xs[10]
  assert list(nnx.List()) == []


def test_dict_container():
  d = nnx.Dict(a=1, b=jnp.ones(1), c=nnx.Param(jnp.zeros(2)))
  assert list(d) == ['a', 'b', 'c']
  assert d['a'] == 1 and d.a == 1 and len(d) == 3
  assert [jax.tree_util.keystr(p) for p, _ in _leaves(d)] == [
    '.b',
    '.c.value',
  ]
  with pytest.raises(KeyError):
    d['zz']
  with pytest.raises(TypeError):
    nnx.Dict({1: 2})
  del d['a']
  assert list(d) == ['b', 'c']


def _leaves(tree):
  return jax.tree_util.tree_leaves_with_path(tree)


def test_module_with_containers_state_paths():
  class M(nnx.Module):
    def __init__(self):
      self.layers = nnx.List([nnx.Param(jnp.ones(1)), nnx.Param(jnp.ones(2))])
      self.d = nnx.Dict({'x': nnx.Param(jnp.ones(1))})

  state = nnx.state(M())
  assert sorted(state['layers'].keys()) == [0, 1]
  assert list(state['d'].keys()) == ['x']


def test_list_of_modules_in_plain_list_raises():
  class Lin(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(1))

  class M(nnx.Module):
    def __init__(self):
      self.layers = [Lin(), Lin()]

  with pytest.raises(ValueError, match=r'nnx\.List'):
    M()


def test_train_state():
  class Lin(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(2))

    def __call__(self, x):
      return x * self.w

  class Sgd:
    def init(self, params):
      return ()

    def update(self, grads, state, params=None):
      return jax.tree.map(lambda g: -0.1 * g, grads), state

  graphdef, params = nnx.split(Lin())
  st = nnx.TrainState.create(graphdef, params=params, tx=Sgd())
  assert int(st.step) == 0
  out, _ = st.apply('params')(jnp.ones(2))
  assert out.tolist() == [1.0, 1.0]
  st2 = st.apply_gradients(jax.tree.map(jnp.ones_like, params))
  assert int(st2.step) == 1
  np.testing.assert_allclose(st2.params['w'][...], [0.9, 0.9])
  assert st.replace(step=5).step == 5
  assert nnx.helpers.has_keyword_arg(lambda x, rngs=None: x, 'rngs')
  assert not nnx.helpers.has_keyword_arg(lambda x: x, 'rngs')


# -- Module helpers ---------------------------------------------------------------


class _Sub(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(1))
    self.flag = False

  def set_view(self, flag: bool | None = None):
    """Sets the flag.

    Args:
      flag: the new flag,
        on two lines.
    """
    if flag is not None:
      self.flag = flag


class _Top(nnx.Module):
  def __init__(self):
    self.b = _Sub()
    self.a = _Sub()


def test_iter_modules_and_children():
  top = _Top()
  assert [p for p, _ in nnx.iter_modules(top)] == [('a',), ('b',), ()]
  assert [k for k, _ in nnx.iter_children(top)] == ['a', 'b']
  assert [k for k, _ in nnx.iter_module_children(top)] == ['a', 'b']
  assert [p for p, _ in nnx.iter_modules(top, graph=False)] == [
    ('a',),
    ('b',),
    (),
  ]


def test_view_and_view_info():
  top = _Top()
  v = nnx.view(top, flag=True)
  assert v is not top and v.a.flag and not top.a.flag
  assert v.a.w is top.a.w
  with pytest.raises(
    ValueError, match=r"Unused keys found in nnx.view: \['x'\]"
  ):
    nnx.view(top, x=1)
  assert nnx.view(top, x=1, raise_if_not_found=False).a.flag is False
  assert nnx.view_info(top) == (
    '_Sub:\n  flag: bool | None = None\n    the new flag,\n    on two lines.'
  )


def test_with_attributes():
  top = _Top()
  w = nnx.with_attributes(top, flag=True)
  assert w.a.flag and w.b.flag and not top.a.flag
  assert w.b.w is top.b.w
  with pytest.raises(ValueError, match='Could not find'):
    nnx.with_attributes(top, zzz=1)
  assert not nnx.with_attributes(top, zzz=1, raise_if_not_found=False).a.flag


def test_capture():
  class Model(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.full((1,), 2.0))

    def __call__(self, x):
      h = x * self.w
      self.sow(nnx.Intermediate, 'h', h)
      return h + 1

  m = Model()
  x = jnp.ones(1)
  y, inter = nnx.capture(m, nnx.Intermediate)(x)
  assert y.tolist() == [3.0]
  assert inter['h'].get_value()[0].tolist() == [2.0]
  with pytest.raises(TypeError):
    inter['h'][...]  # a tuple cannot be indexed with ..., as in Flax
  assert not hasattr(m, 'h')
  _, inter = nnx.capture(m, nnx.Intermediate, method_outputs=nnx.Intermediate)(
    x
  )
  assert sorted(inter.keys()) == ['__call__', 'h']
  assert type(m) is Model
  y2, inter2 = nnx.capture(nnx.Intermediate)(lambda m, x: m(x))(m, x)
  assert y2.tolist() == [3.0] and list(inter2.keys()) == ['h']
  assert nnx.capture(m)(x).tolist() == [3.0]
  assert nnx.module.tuple_init() == ()


def test_capture_sets_aside_what_the_modules_held():
  # values sown before the call stay on the module; only the call's own
  # sows are captured (as in Flax 0.12.8)
  class Model(nnx.Module):
    def __call__(self, x):
      self.sow(nnx.Intermediate, 'h', x)
      self.sow(nnx.Intermediate, 'h', x * 2)
      return x

  m = Model()
  with pytest.warns(DeprecationWarning, match="outside of 'nnx.capture"):
    m(jnp.ones(1))
  _, inter = nnx.capture(m, nnx.Intermediate)(jnp.full((1,), 3.0))
  assert [a.tolist() for a in inter['h'].get_value()] == [[3.0], [6.0]]
  assert [a.tolist() for a in m.h.get_value()] == [[1.0], [2.0]]
  fresh = Model()
  _, inter = nnx.capture(fresh, nnx.Intermediate)(jnp.ones(1))
  assert len(inter['h'].get_value()) == 2 and not hasattr(fresh, 'h')
  assert nnx.module.tuple_reduce((1,), 2) == (1, 2)


def test_sow_perturb_train_eval():
  class M(nnx.Module):
    def __init__(self):
      self.deterministic = False
      self.use_running_average = False

    def __call__(self, x):
      self.sow(nnx.Intermediate, 'i', x)
      return self.perturb('p', x)

  m = M()
  with pytest.warns(DeprecationWarning) as record:
    m(jnp.ones(2))
    m(jnp.ones(2))
  # each call, outside nnx.capture: sow and perturb are deprecated there
  assert [str(w.message).split("'")[1] for w in record] == [
    'Module.sow()',
    'Module.perturb()',
  ] * 2
  _, inter = nnx.capture(m, nnx.Perturbation)(jnp.ones(2))  # no warning
  assert list(inter) == ['p']
  # the Module is left as it is: the Intermediate it sows there is dropped
  assert len(m.i.get_value()) == 2
  assert m.p[...].tolist() == [0.0, 0.0]
  m.eval()
  assert m.deterministic and m.use_running_average
  m.train()
  assert not m.deterministic and not m.use_running_average
  with pytest.raises(ValueError, match='Could not find'):
    m.set_attributes(unknown=1)


def test_container_equality_hash_and_slices():
  assert nnx.List([1, 2]) == nnx.List([1, 2])
  assert nnx.List([1, 2]) != [1, 2]
  with pytest.raises(TypeError, match='unhashable'):
    hash(nnx.List([1]))
  assert nnx.Dict(a=1) == {'a': 1}
  assert isinstance(hash(nnx.Dict(a=1)), int)
  xs = nnx.List([1, 2, 3])
  xs[0:2] = [9, 8]
  xs[::2] = [5, 6]
  assert list(xs) == [5, 8, 6]
  with pytest.raises(ValueError, match='Length mismatch'):
    xs[0:1] = [1, 2]
  assert type(nnx.List()).__module__ == 'flax.nnx.helpers'


def test_tree_map_keeps_attribute_order():
  d = jax.tree.map(lambda x: x * 2, nnx.Dict(a=jnp.ones(1), b=3))
  assert list(d) == ['a', 'b']
  assert d['a'].tolist() == [2.0] and d['b'] == 3


def test_iter_children_yields_every_graph_node_child():
  class P(nnx.Pytree):
    def __init__(self):
      self.x = nnx.Param(jnp.ones(1))

  class M(nnx.Module):
    def __init__(self):
      self.r = nnx.Rngs(0)
      self.p = P()
      self.v = nnx.Variable(jnp.ones(1))
      self.lst = nnx.data([nnx.Param(jnp.ones(1))])  # containers: not
      self.n = 3

  got = [(k, type(c).__name__) for k, c in nnx.iter_children(M())]
  assert got == [('p', 'P'), ('r', 'Rngs'), ('v', 'Variable')]
  assert [k for k, _ in nnx.iter_module_children(M())] == ['p', 'r']
  assert [k for k, _ in nnx.iter_children(P())] == ['x']
  seq = [nnx.Param(jnp.ones(1)), 2, P()]
  assert [k for k, _ in nnx.iter_children(seq)] == [0, 2]
  assert [k for k, _ in nnx.iter_children({'b': P(), 'a': 1})] == ['b']
  with pytest.raises(ValueError, match='graph node'):
    list(nnx.iter_children(3))
  # one function under both names; a shared child comes under each key,
  # in tree mode too
  from flax.nnx import graphlib

  assert graphlib.iter_children is nnx.iter_children

  class Shared(nnx.Module):
    def __init__(self):
      self.a = P()
      self.b = self.a

  assert [k for k, _ in nnx.iter_children(Shared(), graph=False)] == ['a', 'b']


def test_pytree_state_and_nodes():
  class Model(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(2))
      self.name = 'm'

    def __call__(self, x):
      self.sow(nnx.Intermediate, 'h', x)
      return x * self.w

  m = Model()
  state = m._pytree__state
  assert state is m._pytree__state
  assert not state.initializing and not state.is_setup
  assert state.trace_state.is_valid()
  assert repr(state).startswith('PytreeState(\n  trace_state=TraceState(')
  assert dict(m._pytree__nodes) == {'w': True, 'name': False}
  nnx.capture(m, nnx.Intermediate)(jnp.ones(2))
  assert 'h' not in m._pytree__nodes  # the capture left the Module as is
  m.extra = nnx.data(3)
  del m.name
  assert dict(m._pytree__nodes) == {'w': True, 'extra': True}
  with pytest.warns(DeprecationWarning, match="'_object__state' is dep"):
    assert m._object__state is state
  with pytest.warns(DeprecationWarning, match="'_object__nodes' is dep"):
    assert m._object__nodes == m._pytree__nodes

  made = []

  @jax.jit
  def inner(x):
    made.append(Model())
    assert made[0]._pytree__state.trace_state.is_valid()
    return x

  inner(1.0)
  # an object built inside a trace records that trace
  assert not made[0]._pytree__state.trace_state.is_valid()
  assert nnx.merge(*nnx.split(m))._pytree__state is not state
