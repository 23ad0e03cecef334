"""The Variable API of Flax 0.12.8: raw values, operators, metadata,
hooks, ref Variables and Variable defaults."""

import operator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx
from flax.nnx import variablelib


def test_raw_value_access():
  v = nnx.Param(jnp.ones(3))
  assert v.get_raw_value().tolist() == [1.0, 1.0, 1.0]
  v.set_raw_value(jnp.zeros(3))
  assert v[...].tolist() == [0.0, 0.0, 0.0]
  assert v.var_type is nnx.Param and v.type is nnx.Param
  assert v.shape == (3,)
  with pytest.warns(DeprecationWarning, match='out_sharding'):
    assert v.sharding_names is None
  with nnx.use_eager_sharding(False):  # no mesh to shard on
    w = nnx.Param(jnp.ones(2), sharding_names=('a',))
  assert w.get_metadata(exclude_required=True) == {'out_sharding': ('a',)}


def test_get_and_set_value_with_index():
  assert int(nnx.Param(jnp.arange(4)).get_value(index=1)) == 1
  w = nnx.Param(jnp.arange(4))
  w.set_value(7, index=2)
  assert w[...].tolist() == [0, 1, 7, 3]


def test_arithmetic_returns_arrays():
  v = nnx.Param(jnp.arange(3.0))
  assert (v + 2).tolist() == [2.0, 3.0, 4.0]
  assert type(v + 2) is type(jnp.ones(1))
  assert (2 - v).tolist() == [2.0, 1.0, 0.0]
  assert (v * 2).tolist() == [0.0, 2.0, 4.0]
  assert (2**v).tolist() == [1.0, 2.0, 4.0]
  assert float(v @ v) == 5.0
  i = nnx.Param(jnp.arange(3))
  assert (i & 1).tolist() == [0, 1, 0]
  assert (i << 1).tolist() == [0, 2, 4]
  assert (~i).tolist() == [-1, -2, -3]
  assert (-i).tolist() == [0, -1, -2]


def test_comparisons_and_hash():
  v = nnx.Param(jnp.arange(3.0))
  assert (v == 2).tolist() == [False, False, True]
  assert (2 == v).tolist() == [False, False, True]
  assert (v == nnx.Param(jnp.arange(3.0))).tolist() == [True, True, True]
  assert bool(nnx.Param(1) == 1)
  for op in (operator.lt, operator.le, operator.gt, operator.ge):
    with pytest.raises(TypeError):
      op(v, 1)
  with pytest.raises(TypeError, match='unhashable'):
    hash(v)
  assert v in [v]


def test_in_place_operators_raise():
  v = nnx.Param(jnp.ones(1))
  with pytest.raises(NotImplementedError, match=r'variable\[\.\.\.\] \+='):
    v += 1
  with pytest.raises(NotImplementedError, match=r'\*='):
    operator.imul(v, 2)
  v[...] += 1
  assert v[...].tolist() == [2.0]


def test_container_protocols():
  v = nnx.Param(jnp.arange(3.0))
  assert len(v) == 3
  assert 0.0 in v
  assert [float(x) for x in v] == [0.0, 1.0, 2.0]
  assert nnx.Param(lambda x: x + 1)(1) == 2
  assert float(nnx.Param(jnp.array(1.5))) == 1.5
  assert [1, 2, 3][nnx.Param(jnp.array(1))] == 2
  with pytest.raises(TypeError):
    bool(nnx.Param(jnp.array(1)))  # like len() of an unsized array
  assert float(v.sum()) == 3.0


def test_required_metadata():
  v = nnx.Param(jnp.ones(1), tag='x', b=2)
  assert v.get_metadata() == {
    'tag': 'x',
    'b': 2,
    'hijax': False,
    'ref': False,
    'eager_sharding': True,
  }
  assert v.get_metadata(exclude_required=True) == {'tag': 'x', 'b': 2}
  assert v.get_metadata('ref') is False
  p = nnx.Param.from_metadata(
    jnp.ones(1), {'a': 1, 'hijax': False, 'ref': False}
  )
  assert repr(p) == (
    'Param( # 1 (4 B)\n  value=Array([1.], dtype=float32),\n  a=1\n)'
  )


def test_copy_replace_to_state_update():
  w = nnx.Param(jnp.arange(4.0), tag=1)
  c = w.copy(jnp.ones(1), tag=3)
  assert c.tag == 3 and c[...].tolist() == [1.0] and w.tag == 1
  r = w.replace(tag=5)
  assert r.tag == 5 and r[...].tolist() == w[...].tolist()
  s = w.to_state()
  assert type(s) is nnx.Param and s is not w
  w.update_from_state(nnx.Param(jnp.zeros(4)))
  assert w[...].tolist() == [0.0] * 4


def test_hooks_warn_and_run():
  with pytest.warns(UserWarning, match='Variable hooks are deprecated'):
    p = nnx.Param(
      jnp.ones(2),
      on_get_value=lambda v, x: x * 10,
      on_set_value=lambda v, x: x + 1,
      on_create_value=lambda v, x: x * 2,
    )
  assert p.get_raw_value().tolist() == [2.0, 2.0]
  assert p[...].tolist() == [20.0, 20.0]
  p[...] = jnp.zeros(2)
  assert p.get_raw_value().tolist() == [1.0, 1.0]
  assert list(p.get_metadata(exclude_required=True)) == [
    'on_get_value',
    'on_set_value',
    'on_create_value',
  ]


def test_with_metadata_hooks():
  with pytest.warns(UserWarning, match='Variable hooks are deprecated'):
    init = nnx.with_metadata(
      jax.nn.initializers.ones, on_get_value=lambda v, x: x * 3, tag='t'
    )
  meta = init(jax.random.key(0), (1,))
  assert isinstance(meta, nnx.VariableMetadata)
  assert meta.metadata == {'tag': 't'} and len(meta.on_get_value) == 1
  with pytest.warns(UserWarning):
    q = nnx.Param(init(jax.random.key(0), (2,)))
  assert q[...].tolist() == [3.0, 3.0]
  assert list(q.get_metadata()) == [
    'tag',
    'on_get_value',
    'hijax',
    'ref',
    'eager_sharding',
  ]


def test_hook_methods_on_subclass_warn():
  class Shifted(nnx.Variable):
    def on_get_value(self, value):
      return value + 100

  with pytest.warns(UserWarning, match='Variable hooks are deprecated'):
    s = Shifted(jnp.ones(1))
  assert s[...].tolist() == [101.0]


def test_ref_variables():
  q = nnx.Param(jnp.ones(2), ref=True)
  assert q.ref and not q.hijax
  assert variablelib.is_array_ref(q.get_raw_value())
  q[...] = jnp.zeros(2)
  assert q[...].tolist() == [0.0, 0.0]
  assert repr(q) == (
    'Param( # 2 (8 B)\n  value=Array([0., 0.], dtype=float32),\n  ref=True\n)'
  )
  assert not nnx.Param(1).ref
  assert nnx.Param(jnp.ones(1), hijax=True).hijax  # see test_hijax_variables


def test_var_defaults():
  assert repr(nnx.var_defaults()) == 'VarDefaults(hijax=False, ref=False)'
  assert dict(nnx.var_defaults()) == {'hijax': False, 'ref': False}
  with nnx.var_defaults(ref=True):
    assert dict(nnx.var_defaults()) == {'hijax': False, 'ref': True}
    assert nnx.Param(jnp.ones(1)).ref
  assert dict(nnx.var_defaults()) == {'hijax': False, 'ref': False}
  assert type(nnx.var_defaults(ref=False)).__name__ == 'VarDefaultsContext'

  @nnx.var_defaults(ref=True)
  def make():
    return nnx.Param(jnp.ones(1))

  assert make().ref and not nnx.Param(jnp.ones(1)).ref


def test_eager_sharding_flag():
  assert nnx.using_eager_sharding()
  with nnx.use_eager_sharding(False):
    assert not nnx.using_eager_sharding()
    p = nnx.Param('abc')
  assert nnx.using_eager_sharding()
  assert p.get_metadata('eager_sharding') is False
  assert repr(p) == "Param(\n  value='abc',\n  eager_sharding=False\n)"
  assert nnx.use_eager_sharding.get_default() is True


def test_set_metadata_and_with_vars():
  class M(nnx.Module):
    def __init__(self):
      self.kernel = nnx.Param(jnp.ones(2))
      self.bias = nnx.Param(jnp.zeros(2))

  m = M()
  nnx.set_metadata(m, tag='hi')
  assert (m.kernel.tag, m.bias.tag) == ('hi', 'hi')
  nnx.set_metadata(m, only=nnx.PathContains('kernel'), foo=1)
  assert m.kernel.has_metadata('foo') and not m.bias.has_metadata('foo')
  with pytest.warns(DeprecationWarning, match='Use with_vars instead'):
    m2 = nnx.vars_as(m, ref=True)
  assert m2 is not m and m2.kernel is not m.kernel
  assert m2.kernel.ref and not m.kernel.ref
  np.testing.assert_array_equal(m2.kernel[...], m.kernel[...])
  m3 = nnx.with_vars(m2, ref=False)
  assert not m3.kernel.ref
  m4 = nnx.with_vars(m, ref=True, only=nnx.PathContains('bias'))
  assert m4.bias.ref and m4.kernel is m.kernel
  m.shared = m.kernel
  with pytest.raises(ValueError, match='allow_duplicates'):
    nnx.with_vars(m, ref=True)
  m5 = nnx.with_vars(m, ref=True, allow_duplicates=True)
  assert m5.shared is m5.kernel


def test_ellipsis_indexing_of_non_array_values():
  # ``[...]`` indexes the value: arrays come back as they are, Python
  # containers and scalars cannot be indexed with an Ellipsis.
  for value in (3, (1, 2), [1, 2], None):
    with pytest.raises(TypeError):
      nnx.Param(value)[...]
  assert float(nnx.Param(np.float32(2))[...]) == 2.0
  assert nnx.Param({'a': 1})['a'] == 1
  v = nnx.Param(3)
  with pytest.raises(TypeError):
    v[...] = 4
  assert v.get_value() == 3
  d = nnx.Param({'a': 1})
  d['a'] = 7
  assert d.get_value() == {'a': 7}
  w = nnx.Param(jnp.ones(3))
  w[...] = 5
  assert w[...].tolist() == [5.0, 5.0, 5.0]
  with pytest.raises(ValueError):
    w[...] = jnp.ones(2)
  w[1] = 7
  assert w[...].tolist() == [5.0, 7.0, 5.0]
