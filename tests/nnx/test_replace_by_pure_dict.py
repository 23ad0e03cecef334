"""nnx.replace_by_pure_dict puts new Variables into the State: the Module
the State was split from keeps its values until nnx.update (values settled
against Flax 0.12.8)."""

import pathlib
import sys
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from flax.nnx.variablelib import is_array_ref

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import stand_in_layers  # noqa: E402


def _linear():
  return stand_in_layers.Linear(2, 3, rngs=nnx.Rngs(0))


def test_state_gets_new_variables_and_module_keeps_its_values():
  m = _linear()
  kernel = np.asarray(m.kernel[...])
  _, params = nnx.split(m, nnx.Param)
  nnx.replace_by_pure_dict(
    params, {'kernel': jnp.ones((2, 3)), 'bias': jnp.ones(3)}
  )
  assert params['kernel'] is not m.kernel
  assert type(params['kernel']) is nnx.Param
  np.testing.assert_array_equal(m.kernel[...], kernel)
  np.testing.assert_array_equal(params['kernel'][...], np.ones((2, 3)))
  nnx.update(m, params)
  assert float(m.kernel[...].sum()) == 6.0
  assert float(m.bias[...].sum()) == 3.0


def test_inside_jax_jit_on_a_captured_module():
  m = _linear()

  @jax.jit
  def f(w):
    g, params, rest = nnx.split(m, nnx.Param, nnx.Not(nnx.Param))
    nnx.replace_by_pure_dict(params, {'kernel': w, 'bias': jnp.zeros(3)})
    return nnx.merge(g, params, rest, copy=True)(jnp.ones((1, 2)))

  assert f(jnp.full((2, 3), 0.5)).tolist() == [[1.0, 1.0, 1.0]]


@pytest.mark.parametrize('graph', [True, False])
def test_graph_and_tree_mode_split(graph):
  m = _linear()
  _, params = nnx.split(m, graph=graph)
  old = params['kernel']
  nnx.replace_by_pure_dict(
    params, {'kernel': jnp.ones((2, 3)), 'bias': jnp.ones(3)}
  )
  assert old is m.kernel and params['kernel'] is not m.kernel
  assert float(m.kernel[...].sum()) != 6.0


def test_metadata_kept_and_method_form():
  v = nnx.Param(jnp.zeros(2), foo=3)
  s = nnx.State({'v': v, 'n': 3})
  s.replace_by_pure_dict({'v': jnp.ones(2), 'n': 5})
  assert s['v'] is not v and s['v'].foo == 3
  np.testing.assert_array_equal(v[...], [0.0, 0.0])
  assert s['n'] == 5


def test_replace_fn_sees_each_leaf():
  seen = []

  def replace(leaf, value):
    seen.append((type(leaf).__name__, value))
    return value

  s = nnx.State({'v': nnx.Param(1), 'n': 3})
  nnx.replace_by_pure_dict(s, {'v': 4, 'n': 5}, replace_fn=replace)
  assert seen == [('Param', 4), ('int', 5)]
  assert nnx.to_pure_dict(s) == {'v': 4, 'n': 5}


def test_ref_variables_get_a_new_ref():
  r = nnx.Param(jnp.zeros(2), ref=True)
  s = nnx.State({'r': r})
  nnx.replace_by_pure_dict(s, {'r': jnp.ones(2)})
  assert s['r'] is not r and s['r'].ref
  assert is_array_ref(s['r'].get_raw_value())
  np.testing.assert_array_equal(r[...], [0.0, 0.0])


def test_variable_copy_follows_the_ref_metadata():
  r = nnx.Param(jnp.zeros(2), ref=True)
  v = nnx.Param(jnp.zeros(2))
  new = r.replace(jnp.ones(2))
  assert new.ref and is_array_ref(new.get_raw_value())
  assert new.get_raw_value() is not r.get_raw_value()
  assert not r.replace(ref=False).ref
  assert not is_array_ref(r.copy(ref=False).get_raw_value())
  assert is_array_ref(v.copy(ref=True).get_raw_value())
  assert r.copy(_copy_ref=False).get_raw_value() is r.get_raw_value()
  with pytest.raises(TypeError, match='new_ref'):
    r.replace(None)


def test_key_paths():
  s = nnx.State({'a': {0: nnx.Param(1)}, 'b': {'0': nnx.Param(2)}})
  nnx.replace_by_pure_dict(s, {'a': {'0': 5}, 'b': {'0': 6}})
  assert nnx.to_pure_dict(s) == {'a': {0: 5}, 'b': {'0': 6}}
  # empty mappings hold no values
  nnx.replace_by_pure_dict(s, {'a': {}, 'b': {'0': {}}})
  assert nnx.to_pure_dict(s) == {'a': {0: 5}, 'b': {'0': 6}}
  for bad, path in [
    ({'zz': 1}, "('zz',)"),
    ({'a': 3}, "('a',)"),
    ({'b': {0: 1}}, "('b', 0)"),
    ({'a': {'0': {'x': 1}}}, "('a', '0', 'x')"),
  ]:
    with pytest.raises(ValueError) as info:
      nnx.replace_by_pure_dict(s, bad)
    assert str(info.value) == f'key in pure_dict not available in state: {path}'
