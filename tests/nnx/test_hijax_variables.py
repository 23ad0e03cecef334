"""Hijax Variables: ``nnx.Param(x, hijax=True)`` is a JAX value that
``jax.jit`` and the other transforms take and update in place."""

import copy

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx
from flax.nnx import variablelib


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2), hijax=True)
    self.count = nnx.BatchStat(jnp.zeros(()), hijax=True)

  def __call__(self, x):
    self.count[...] += 1
    return x * self.w[...]


class Count(nnx.Variable):
  pass


def test_type_and_isinstance():
  v = nnx.Param(jnp.ones(3), hijax=True)
  assert type(v).__name__ == 'HijaxVariable'
  assert type(type(v)) is variablelib.HijaxVariableMeta
  assert isinstance(v, variablelib.HijaxVariable)
  assert isinstance(v, nnx.Param) and isinstance(v, nnx.Variable)
  assert not isinstance(v, nnx.BatchStat)
  assert v.hijax and not v.ref
  assert v.type is nnx.Param and v.var_type is nnx.Param
  assert not nnx.Param(jnp.ones(3)).hijax


def test_one_class_for_every_variable_type():
  with nnx.var_defaults(hijax=True):
    p, s, c = nnx.Param(1.0), nnx.BatchStat(2.0), Count(3)
    rngs = nnx.Rngs(0)
  for v in (p, s, c, rngs.default.key, rngs.default.count):
    assert type(v) is variablelib.HijaxVariable
  assert [v.type for v in (p, s, c)] == [nnx.Param, nnx.BatchStat, Count]
  assert isinstance(s, nnx.BatchStat) and not isinstance(s, nnx.Param)
  assert isinstance(rngs.default.key, nnx.RngKey)
  assert not isinstance(rngs.default.count, nnx.RngKey)
  # GraphDefs still tell the Variable types apart, and merging rebuilds
  # each one as a hijax Variable of its type
  for graph in (True, False):
    a = nnx.graphdef(nnx.Dict(x=p), graph=graph)
    b = nnx.graphdef(nnx.Dict(x=s), graph=graph)
    assert a != b
    merged = nnx.merge(*nnx.split(nnx.Dict(x=p, y=s), graph=graph))
    assert type(merged['y']) is variablelib.HijaxVariable
    assert merged['y'].type is nnx.BatchStat and merged['x'].type is nnx.Param
  assert copy.deepcopy(s).type is nnx.BatchStat
  assert nnx.state(nnx.Dict(x=p, y=s), nnx.BatchStat)['y'] is s


def test_repr_and_metadata():
  v = nnx.Param(jnp.ones(3), hijax=True, tag='x')
  assert repr(v) == (
    'Param( # 3 (12 B)\n'
    '  value=Array([1., 1., 1.], dtype=float32),\n'
    '  hijax=True,\n'
    "  tag='x'\n"
    ')'
  )
  assert v.get_metadata() == {
    'eager_sharding': True,
    'hijax': True,
    'ref': False,
    'tag': 'x',
  }
  assert list(v.get_metadata()) == ['eager_sharding', 'hijax', 'ref', 'tag']
  assert v.tag == 'x' and v.get_metadata('tag') == 'x'
  v.set_metadata(tag='y')
  assert v.tag == 'y'


def test_get_and_set_outside_transforms():
  v = nnx.Param(jnp.ones(3), hijax=True)
  np.testing.assert_array_equal(v[...], jnp.ones(3))
  assert float(v[0]) == 1.0
  v[...] = jnp.zeros(3)
  np.testing.assert_array_equal(v.get_value(), jnp.zeros(3))
  v.set_value(jnp.full(3, 5.0))
  np.testing.assert_array_equal(v + 1, jnp.full(3, 6.0))
  np.testing.assert_array_equal(2 * v, jnp.full(3, 10.0))
  np.testing.assert_array_equal(v * v, jnp.full(3, 25.0))
  np.testing.assert_array_equal(np.asarray(v), np.full(3, 5.0))
  assert len(v) == 3 and float(v.sum()) == 15.0
  assert v.shape == (3,) and v.dtype == jnp.float32


def test_identity_equality():
  a = nnx.Param(jnp.ones(3), hijax=True)
  b = nnx.Param(jnp.ones(3), hijax=True)
  assert a == a and a != b
  assert len({a, b}) == 2


def test_is_a_jax_value():
  v = nnx.Param(jnp.ones(3), hijax=True)
  assert jax.tree.leaves(v) == [v]
  aval = jax.typeof(v)
  assert type(aval) is variablelib.AbstractVariable
  assert str(aval) == 'Param()' and aval.hijax
  assert aval == jax.typeof(nnx.Param(jnp.zeros(4), hijax=True))
  assert aval != jax.typeof(nnx.BatchStat(jnp.zeros(3), hijax=True))
  qdd = v.cur_qdd()
  assert isinstance(qdd, variablelib.VariableQDD)
  assert qdd.var_type is nnx.Param
  assert qdd.leaf_avals == (jax.typeof(jnp.ones(3)),)
  assert v.type_state() == qdd


def test_jit_mutation_visible_outside():
  v = nnx.Param(jnp.ones(3), hijax=True)

  @jax.jit
  def f(v):
    assert isinstance(v, nnx.Param) and isinstance(v, nnx.Variable)
    assert isinstance(v, variablelib.HijaxVariable)
    v[...] = v[...] + 1
    return v[...] * 2

  np.testing.assert_array_equal(f(v), jnp.full(3, 4.0))
  np.testing.assert_array_equal(v[...], jnp.full(3, 2.0))
  f(v)
  np.testing.assert_array_equal(v[...], jnp.full(3, 3.0))


def test_jaxpr_uses_variable_primitives():
  v = nnx.Param(jnp.ones(3), hijax=True)

  def f(v):
    v[...] = v[...] * 2

  text = str(jax.make_jaxpr(f)(v))
  assert 'get_variable' in text and 'set_variable' in text
  assert variablelib.get_variable_p.name == 'get_variable'
  assert variablelib.set_variable_p.name == 'set_variable'
  assert variablelib.new_variable_p.name == 'new_variable'
  assert isinstance(variablelib.variable_effect, variablelib.VariableEffect)


def test_jit_methods_and_operators_on_tracers():
  v = nnx.Param(jnp.arange(3.0), hijax=True, tag='t')

  @jax.jit
  def f(v):
    assert v.hijax and v.type is nnx.Param
    assert v.get_metadata('tag') == 't'
    v.set_value(v.get_value() + 1)
    v[0] = 10.0
    return v + 1, 1 + v, jnp.asarray(v) * 1, v.sum(), len(v)

  a, b, c, s, n = f(v)
  np.testing.assert_array_equal(a, jnp.array([11.0, 3.0, 4.0]))
  np.testing.assert_array_equal(b, a)
  np.testing.assert_array_equal(c, jnp.array([10.0, 2.0, 3.0]))
  assert float(s) == 15.0 and int(n) == 3
  np.testing.assert_array_equal(v[...], jnp.array([10.0, 2.0, 3.0]))


def test_jit_closure_and_creation_inside():
  v = nnx.Param(jnp.ones(3), hijax=True)

  @jax.jit
  def scale():
    v[...] = v[...] * 10
    return v + 0  # reads the updated value

  np.testing.assert_array_equal(scale(), jnp.full(3, 10.0))
  np.testing.assert_array_equal(v[...], jnp.full(3, 10.0))

  @jax.jit
  def make(x):
    w = nnx.BatchStat(x, hijax=True)
    w[...] += 3
    return w[...]

  np.testing.assert_array_equal(make(jnp.ones(2)), jnp.full(2, 4.0))


def test_control_flow_and_grad_of_other_args():
  v = nnx.Param(jnp.ones(3), hijax=True)

  def body(i, _):
    v[...] = v[...] + 1

  jax.jit(lambda: jax.lax.fori_loop(0, 3, body, None))()
  np.testing.assert_array_equal(v[...], jnp.full(3, 4.0))
  out = jax.jit(lambda p: jax.lax.cond(p, lambda: v[...], lambda: -v[...]))(
    False
  )
  np.testing.assert_array_equal(out, jnp.full(3, -4.0))
  grad = jax.grad(lambda x, v: (x * v[...]).sum())(jnp.ones(3), v)
  np.testing.assert_array_equal(grad, jnp.full(3, 4.0))
  ys = jax.vmap(lambda x: x * v[...])(jnp.ones((2, 3)))
  assert ys.shape == (2, 3)
  shape = jax.eval_shape(lambda v: v[...] * 2, v)
  assert shape.shape == (3,) and shape.dtype == jnp.float32


def test_errors():
  v = nnx.Param(jnp.ones(3), hijax=True)
  with pytest.raises(
    NotImplementedError, match="jvp not implemented for 'get_variable'"
  ):
    jax.grad(lambda v: (v[...] ** 2).sum())(v)
  with pytest.raises(
    NotImplementedError, match="jvp not implemented for 'new_variable'"
  ):
    jax.grad(lambda x: nnx.Param(x, hijax=True)[...].sum())(jnp.ones(2))
  with pytest.raises(AttributeError, match=r'variable\[\.\.\.\]\.shape'):
    jax.typeof(v).shape  # noqa: B018
  with pytest.raises(TypeError, match='as a JAX value'):
    nnx.Param('text', hijax=True)
  with pytest.raises(ValueError, match='not a hijax Variable'):
    nnx.with_vars(nnx.Param(jnp.ones(1)), mutable=False)


def test_var_defaults_and_custom_types():
  with nnx.var_defaults(hijax=True):
    p = nnx.Param(jnp.ones(1))
    assert dict(nnx.var_defaults()) == {'hijax': True, 'ref': False}
  assert type(p).__name__ == 'HijaxVariable' and p.hijax
  assert not nnx.Param(jnp.ones(1)).hijax
  c = Count(jnp.array(0), hijax=True)
  assert isinstance(c, Count) and c.type is Count
  c[...] += 1
  assert int(c[...]) == 1


def test_copies():
  v = nnx.Param(jnp.ones(2), hijax=True, tag='a')
  for new in (v.copy(), copy.copy(v), copy.deepcopy(v), v.to_state()):
    assert type(new).__name__ == 'HijaxVariable' and new is not v
    assert new.tag == 'a'
    new[...] = jnp.zeros(2)
    np.testing.assert_array_equal(v[...], jnp.ones(2))


def test_module_graph_operations():
  m = Model()
  state = nnx.state(m)
  assert {type(x).__name__ for x in jax.tree.leaves(state)} == {'HijaxVariable'}
  graphdef, state = nnx.split(m)
  m2 = nnx.merge(graphdef, state)
  assert m2.w.hijax and isinstance(m2.w, nnx.Param)
  np.testing.assert_array_equal(m2.w[...], jnp.ones(2))
  assert nnx.to_pure_dict(nnx.state(m))['w'].shape == (2,)
  assert repr(m).startswith(
    'Model( # BatchStat: 1 (4 B), Param: 2 (8 B), Total: 3 (12 B)'
  )


def test_jax_jit_of_module_updates_state():
  m = Model()
  y = jax.jit(lambda m, x: m(x))(m, jnp.full(2, 3.0))
  np.testing.assert_array_equal(y, jnp.full(2, 3.0))
  assert float(m.count[...]) == 1.0


def test_with_vars_conversions():
  class Plain(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(2), tag='a')
      self.b = nnx.BatchStat(jnp.zeros(2))

  n = Plain()
  h = nnx.with_vars(n, hijax=True)
  assert h.w.hijax and h.b.hijax and h.w is not n.w
  assert h.w.tag == 'a' and not n.w.hijax
  only = nnx.with_vars(n, hijax=True, only=nnx.Param)
  assert only.w.hijax and not only.b.hijax
  back = nnx.with_vars(h, hijax=False)
  assert not back.w.hijax and back.w.tag == 'a'
  assert back.w.get_metadata('hijax') is False
  assert nnx.with_vars(h).w is h.w
  frozen = nnx.with_vars(n, hijax=True, mutable=False)
  assert frozen.w.get_metadata('mutable') is False
  assert 'mutable=False' in repr(frozen.w)


def test_mutable_false_is_only_metadata():
  v = nnx.with_vars(nnx.Param(jnp.ones(2)), hijax=True, mutable=False)
  assert v.get_metadata('mutable') is False
  aval = jax.typeof(v)
  assert aval.has_qdd
  with pytest.raises(AttributeError):
    aval.shape  # noqa: B018
  np.testing.assert_array_equal(
    jax.jit(lambda v: v[...] * 2)(v), 2 * jnp.ones(2)
  )
  v[...] = jnp.zeros(2)
  np.testing.assert_array_equal(v[...], jnp.zeros(2))

  @jax.jit
  def update(v):
    v[...] = jnp.full(2, 7.0)

  update(v)  # updated in place like any hijax Variable
  np.testing.assert_array_equal(v[...], jnp.full(2, 7.0))
  w = nnx.Param(jnp.ones(2), hijax=True, mutable=False)
  jax.jit(lambda: w.set_value(jnp.zeros(3)))()  # a closure, another shape
  np.testing.assert_array_equal(w[...], jnp.zeros(3))
  assert w.get_metadata('mutable') is False


def test_ref_hijax_variable():
  v = nnx.Param(jnp.ones(2), hijax=True, ref=True)
  assert v.ref and v.hijax
  assert isinstance(v.get_raw_value(), jax.Ref)
  v[...] = jnp.zeros(2)
  np.testing.assert_array_equal(v[...], jnp.zeros(2))
  assert 'ref=True' in repr(v)
  with pytest.raises(ValueError, match='ref=True cannot be used inside'):
    jax.jit(lambda v: v[...] * 2)(v)


def test_with_vars_and_view_list_attributes_sorted():
  class Two(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(1))
      self.d = nnx.data({'z': nnx.Param(jnp.ones(1)), 'a': jnp.ones(1)})
      self.b = nnx.BatchStat(jnp.zeros(1))

  t = Two()
  assert list(vars(t)) == ['w', 'd', 'b']
  for copy_ in (nnx.with_vars(t, hijax=True), nnx.view(t)):
    assert list(vars(copy_)) == ['b', 'd', 'w']
    assert list(copy_.d) == ['a', 'z']


def test_vars_as_is_a_deprecated_with_vars():
  m = nnx.Dict(w=nnx.Param(jnp.ones(1)))
  with pytest.warns(DeprecationWarning, match='Use with_vars instead'):
    converted = nnx.vars_as(m, hijax=True)
  assert converted['w'].hijax and not m['w'].hijax


def test_rngs_of_hijax_variables_in_jit():
  with nnx.var_defaults(hijax=True):
    rngs = nnx.Rngs(0, dropout=1)
  assert type(rngs.dropout.count).__name__ == 'HijaxVariable'
  plain = nnx.Rngs(0, dropout=1)
  np.testing.assert_array_equal(
    jax.random.key_data(rngs.dropout()), jax.random.key_data(plain.dropout())
  )
  assert int(rngs.dropout.count[...]) == 1

  @jax.jit
  def draw(r):
    return r.dropout()

  np.testing.assert_array_equal(
    jax.random.key_data(draw(rngs)), jax.random.key_data(plain.dropout())
  )
  assert int(rngs.dropout.count[...]) == 2
  closure = jax.jit(lambda: rngs.dropout())
  np.testing.assert_array_equal(
    jax.random.key_data(closure()), jax.random.key_data(plain.dropout())
  )
  assert int(rngs.dropout.count[...]) == 3
  clone = rngs.dropout._clone()
  assert int(clone.count[...]) == 3


def test_returning_traced_hijax_variables_from_jit_raises():
  m = Model()

  @jax.jit
  def state_inside(m):
    return nnx.state(m)  # its leaves are the traced hijax Variables

  with pytest.raises(TypeError):
    state_inside(m)

  @jax.jit
  def raw_inside(m):
    return m.w.get_raw_value() * 2

  np.testing.assert_array_equal(raw_inside(m), jnp.full(2, 2.0))


def test_jit_retraces_when_content_changes():
  v = nnx.Param(jnp.ones(3), hijax=True)
  traces = []

  @jax.jit
  def double(v):
    traces.append(1)
    v[...] = v[...] * 2
    return v[...].sum()

  assert float(double(v)) == 6.0 and len(traces) == 1
  v.set_value(jnp.ones(5))  # another shape: traced again
  assert float(double(v)) == 10.0 and len(traces) == 2
  v.set_metadata(tag='x')  # other metadata: traced again
  assert float(double(v)) == 20.0 and len(traces) == 3
  w = nnx.Param(jnp.ones(5), hijax=True)  # same content: cached
  assert float(double(w)) == 10.0 and len(traces) == 3

  @jax.jit
  def reshape(v):
    v.set_value(jnp.zeros(2))

  reshape(v)
  np.testing.assert_array_equal(v[...], jnp.zeros(2))
