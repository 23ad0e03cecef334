"""Variables, State, filters, split/merge/update, Module helpers, Rngs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx


class Dense(nnx.Module):
  def __init__(self, din, dout, rngs):
    self.w = nnx.Param(jax.random.normal(rngs.params(), (din, dout)))
    self.b = nnx.Param(jnp.zeros(dout))
    self.count = nnx.BatchStat(jnp.array(0))

  def __call__(self, x):
    self.count[...] += 1
    y = x @ self.w
    return y + jnp.broadcast_to(self.b[...], y.shape)  # no rank promotion


class MLP(nnx.Module):
  def __init__(self, rngs):
    self.l1 = Dense(2, 3, rngs)
    self.l2 = Dense(3, 1, rngs)

  def __call__(self, x):
    return self.l2(jax.nn.relu(self.l1(x)))


def test_variable_value_and_arithmetic():
  v = nnx.Param(jnp.array([1.0, 2.0]))
  np.testing.assert_allclose(v + 1, [2.0, 3.0])
  np.testing.assert_allclose(2 * v, [2.0, 4.0])
  v[...] = jnp.array([3.0, 4.0])
  np.testing.assert_allclose(v[...], [3.0, 4.0])
  v[0] = 7.0
  np.testing.assert_allclose(v[...], [7.0, 4.0])


def test_variable_metadata():
  with nnx.use_eager_sharding(False):  # no mesh to shard on
    v = nnx.Param(jnp.ones(2), sharding_names=('a',))
  assert v.get_metadata('out_sharding') == ('a',)
  assert v.has_metadata('out_sharding')
  v.set_metadata('foo', 1)
  assert v.foo == 1
  v.del_metadata('foo')
  assert not v.has_metadata('foo')
  with pytest.raises(KeyError):
    v.get_metadata('foo')
  v.set_metadata({'x': 2})
  assert v.get_metadata(exclude_required=True) == {'x': 2}
  assert v.get_metadata() == {
    'x': 2,
    'hijax': False,
    'ref': False,
    'eager_sharding': True,
  }
  assert v.type is nnx.Param


def test_with_metadata_and_hooks():
  init = nnx.with_metadata(jax.nn.initializers.ones, out_sharding=('x',))
  with nnx.use_eager_sharding(False):
    p = nnx.Param(init(jax.random.key(0), (3,)))
  assert p.out_sharding == ('x',)
  with pytest.warns(DeprecationWarning, match="'sharding_names' is deprecated"):
    assert p.sharding_names == ('x',)
  with pytest.warns(UserWarning, match='Variable hooks are deprecated'):
    doubled = nnx.Param(jnp.ones(2), on_get_value=lambda v, x: x * 2)
  np.testing.assert_allclose(doubled[...], [2.0, 2.0])


def test_variable_names():
  assert nnx.variable_name_from_type(nnx.Param) == 'params'
  assert nnx.variable_type_from_name('batch_stats') is nnx.BatchStat
  with pytest.raises(ValueError):
    nnx.variable_type_from_name('nothing_here')
  t = nnx.variable_type_from_name('my_coll', allow_register=True)
  assert issubclass(t, nnx.Variable)
  assert nnx.variable_name_from_type(t) == 'my_coll'


def test_rngs_key_derivation():
  rngs = nnx.Rngs(0)
  k0, k1 = rngs.params(), rngs()
  base = jax.random.key(0)
  assert (
    jax.random.key_data(k0) == jax.random.key_data(jax.random.fold_in(base, 0))
  ).all()
  assert (
    jax.random.key_data(k1) == jax.random.key_data(jax.random.fold_in(base, 1))
  ).all()
  assert rngs.default.count[...].dtype == jnp.uint32
  with pytest.raises(AttributeError, match='dropout'):
    nnx.Rngs(params=0).dropout()


def test_state_split_merge_update_roundtrip():
  m = MLP(nnx.Rngs(0))
  g, params, rest = nnx.split(m, nnx.Param, ...)
  assert set(params.l1.keys()) == {'b', 'w'}
  assert set(rest.l1.keys()) == {'count'}
  m2 = nnx.merge(g, params, rest)
  x = jnp.ones((4, 2))
  np.testing.assert_allclose(m(x), m2(x))
  new = jax.tree.map(lambda a: a * 0, nnx.state(m, nnx.Param))
  nnx.update(m, new)
  np.testing.assert_allclose(m(x), jnp.zeros((4, 1)))
  with pytest.raises(ValueError, match='Non-exhaustive'):
    nnx.split(m, nnx.Param)


def test_state_repr_sorted_nested():
  m = MLP(nnx.Rngs(0))
  text = repr(jax.tree.map(jnp.shape, nnx.state(m, nnx.Param)))
  assert text.startswith("State({\n  'l1': {\n    'b': Param(\n")
  assert 'value=(2, 3)' in text


def test_state_pytree_keys_sorted_and_kept_exactly():
  class Key(str):
    pass

  for _ in range(2):  # the second round hits cached key orders
    a = nnx.State({'b': jnp.ones(1), 'a': jnp.zeros(1)})
    assert jax.tree_util.tree_structure(a).node_data()[1] == ('a', 'b')
    ints = jax.tree.map(lambda x: x + 1, nnx.State({1: 1.0, 0: 2.0}))
    bools = jax.tree.map(lambda x: x + 1, nnx.State({True: 1.0, False: 2.0}))
    assert [type(k) for k in bools] == [bool, bool]
    assert [type(k) for k in ints] == [int, int]
    assert dict(ints) == {0: 3.0, 1: 2.0}
    mixed = jax.tree.map(lambda x: x, nnx.State({'x': 1, 2: 2}))
    assert list(mixed) == [2, 'x']
    jax.tree.map(lambda x: x, nnx.State({'a': 1}))  # caches the order of 'a'
    custom = jax.tree.map(lambda x: x, nnx.State({Key('a'): 1}))
    assert type(next(iter(custom))) is Key


def test_filters():
  m = MLP(nnx.Rngs(0))
  s = nnx.state(m, nnx.PathContains('w'))
  assert set(s.l1.keys()) == {'w'}
  s = nnx.state(m, nnx.All(nnx.Param, nnx.Not(nnx.PathContains('w'))))
  assert set(s.l2.keys()) == {'b'}
  s = nnx.state(m, nnx.Any(nnx.BatchStat, nnx.PathContains('b')))
  assert set(s.l1.keys()) == {'b', 'count'}
  assert len(nnx.state(m, nnx.Nothing()).flat_state()) == 0
  assert len(nnx.state(m, nnx.Everything()).flat_state()) == 6


def test_shared_references_and_cycles():
  m = MLP(nnx.Rngs(0))
  m.shared = m.l1
  m.l1.parent = m  # cycle
  g, s = nnx.split(m)
  m2 = nnx.merge(g, s)
  assert m2.shared is m2.l1
  assert m2.l1.parent is m2
  c = nnx.clone(m)
  assert c.l1.w is not m.l1.w
  np.testing.assert_allclose(c.l1.w[...], m.l1.w[...])


def test_cache_invalidated_by_structure_change():
  m = MLP(nnx.Rngs(0))
  assert 'extra' not in nnx.state(m)
  m.extra = nnx.Param(jnp.ones(1))
  assert 'extra' in nnx.state(m)
  del m.extra
  assert 'extra' not in nnx.state(m)


def test_pop_and_sow():
  class M(nnx.Module):
    def __call__(self, x):
      self.sow(nnx.Intermediate, 'h', x)
      return x

  m = M()
  with pytest.warns(DeprecationWarning, match=r"outside of 'nnx.capture\(\)'"):
    m(jnp.ones(2))
    m(jnp.ones(2))
  assert len(m.h.get_value()) == 2
  popped = nnx.pop(m, nnx.Intermediate)
  assert 'h' in popped and not hasattr(m, 'h')


def test_iter_modules_and_set_attributes():
  class Leaf(nnx.Module):
    def __init__(self):
      self.deterministic = False

  class Root(nnx.Module):
    def __init__(self):
      self.b = Leaf()
      self.a = Leaf()

  r = Root()
  assert [p for p, _ in nnx.iter_modules(r)] == [('a',), ('b',), ()]
  assert [k for k, _ in nnx.iter_children(r)] == ['a', 'b']
  # the methods are deprecated, as in Flax 0.12.8
  with pytest.warns(DeprecationWarning, match='iter_modules'):
    assert [p for p, _ in r.iter_modules()] == [('a',), ('b',), ()]
  with pytest.warns(DeprecationWarning, match='iter_children'):
    assert [k for k, _ in r.iter_children()] == ['a', 'b']
  r.eval()
  assert r.a.deterministic and r.b.deterministic
  with pytest.raises(ValueError, match='missing_attr'):
    r.set_attributes(missing_attr=1)


def test_tree_mode_pytree():
  m = MLP(nnx.Rngs(0))
  doubled = jax.tree.map(lambda a: a * 2, m)
  assert isinstance(doubled, MLP)
  np.testing.assert_allclose(doubled.l1.w[...], m.l1.w[...] * 2)
  out = jax.jit(lambda m, x: m(x))(m, jnp.ones((1, 2)))
  assert out.shape == (1, 1)


def test_call_and_split_rngs():
  m = MLP(nnx.Rngs(0))
  y, (g, s) = nnx.call(nnx.split(m)).__call__(jnp.ones((1, 2)))
  assert int(s['l1']['count'][...]) == 1
  # The split State holds m's own Variables, so the call updates m too.
  assert int(m.l1.count[...]) == 1
  rngs = nnx.Rngs(0)
  with nnx.split_rngs(rngs, splits=4):
    assert rngs.default.key[...].shape == (4,)
  assert rngs.default.key[...].shape == ()


def test_state_saves_through_flax_serialization_keeping_variable_types():
  import jax.numpy as jnp

  from flax import nnx
  from flax.core import state_dict

  class Linear(nnx.Module):
    def __init__(self, rngs):
      self.kernel = nnx.Param(jax.random.normal(rngs.params(), (2, 3)))
      self.bias = nnx.Param(jnp.zeros((3,)))

  model = Linear(nnx.Rngs(0))
  sd = state_dict.to_state_dict(nnx.state(model))
  assert sorted(sd) == ['bias', 'kernel']
  assert sd['kernel'].shape == (2, 3)
  target = nnx.state(Linear(nnx.Rngs(1)))
  restored = state_dict.from_state_dict(target, sd)
  assert type(restored['kernel']) is nnx.Param
  assert jnp.array_equal(restored['kernel'][...], model.kernel[...])
  try:
    state_dict.from_state_dict(target, {'kernel': sd['kernel']})
  except ValueError as e:
    assert 'bias' in str(e)
  else:
    raise AssertionError('a missing key restored')


def test_update_with_a_mapped_state_keeps_metadata_rules():
  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(2), tag='a')
      self.b = nnx.BatchStat(jnp.zeros(2))

  m = M()
  nnx.update(m, jax.tree.map(lambda x: x + 1, nnx.state(m)))
  assert m.w[...].tolist() == [2.0, 2.0] and m.b[...].tolist() == [1.0, 1.0]
  state = nnx.state(m)
  state['w'] = nnx.Param(jnp.full(2, 9.0), tag='z')
  nnx.update(m, state)  # a Variable with other metadata brings it along
  assert m.w.tag == 'z' and m.w[...].tolist() == [9.0, 9.0]
  pure = nnx.to_pure_dict(nnx.state(m))
  pure['b'] = pure['b'] * 0
  nnx.update(m, pure)
  assert m.b[...].tolist() == [0.0, 0.0] and m.w.tag == 'z'
