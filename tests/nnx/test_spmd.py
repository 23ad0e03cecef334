"""flax.nnx.spmd and eager sharding on a 2x4 CPU mesh (Flax 0.12.8
behaviour).

The cases need 8 devices: with fewer (no
XLA_FLAGS=--xla_force_host_platform_device_count=8), they all run once in a
fresh process with 8 host CPU devices and each test checks its result.
"""

import json
import os
import subprocess
import sys
import traceback
import warnings

import pytest

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from flax.nnx import spmd
from jax.experimental.layout import Format, Layout
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def _mesh():
  return jax.make_mesh((2, 4), ('data', 'model'))


def _run_all() -> dict:
  """Runs every ``case_*`` of this module; ``{name: error or None}``."""
  results = {}
  for name, fn in sorted(globals().items()):
    if name.startswith('case_'):
      try:
        fn()
        results[name] = None
      except Exception:  # reported by the test of that case
        results[name] = traceback.format_exc()
  return results


@pytest.fixture(scope='module')
def results():
  if jax.device_count() >= 8:
    return None
  env = dict(os.environ)
  env['XLA_FLAGS'] = '--xla_force_host_platform_device_count=8'
  env['JAX_PLATFORMS'] = 'cpu'
  code = (
    'import json, runpy, sys\n'
    f'module = runpy.run_path({__file__!r})\n'
    'print(json.dumps(module["_run_all"]()))\n'
  )
  out = subprocess.run(
    [sys.executable, '-c', code],
    env=env,
    capture_output=True,
    text=True,
    timeout=600,
  )
  assert out.returncode == 0, out.stderr[-3000:]
  return json.loads(out.stdout.strip().splitlines()[-1])


def _check(results, name):
  if results is None:
    globals()[name]()
  else:
    assert results[name] is None, results[name]


def case_eager_sharding_places_variables():
  mesh = _mesh()
  with jax.set_mesh(mesh):
    p = nnx.Param(jnp.ones((4, 8)), out_sharding=('data', 'model'))
  assert p[...].sharding == NamedSharding(mesh, P('data', 'model'))
  q = nnx.Param(jnp.ones((4, 8)), out_sharding=('data', None), mesh=mesh)
  assert q[...].sharding == NamedSharding(mesh, P('data', None))
  rules = [('embed', 'data'), ('mlp', 'model')]
  with jax.set_mesh(mesh), nnx.logical_axis_rules(rules):
    r = nnx.Param(jnp.ones((4, 8)), out_sharding=('embed', 'mlp'))
  assert r[...].sharding.spec == P('data', 'model')
  with nnx.use_eager_sharding(False):
    s = nnx.Param(jnp.ones((4, 8)), out_sharding=('embed', 'mlp'))
  assert s.get_metadata()['eager_sharding'] is False
  with pytest.raises(ValueError, match='An auto mesh context or metadata'):
    nnx.Param(jnp.ones((4, 8)), out_sharding=('embed', 'mlp'))


class PartitionedLinear(nnx.Module):
  """A test-local dense layer whose params carry partitioning metadata."""

  def __init__(self, din, dout, rngs):
    kernel_init = nnx.with_partitioning(
      jax.nn.initializers.lecun_normal(), ('data', 'model')
    )
    bias_init = nnx.with_partitioning(jax.nn.initializers.zeros, ('model',))
    self.kernel = nnx.Param(kernel_init(rngs.params(), (din, dout)))
    self.bias = nnx.Param(bias_init(rngs.params(), (dout,)))


class M(nnx.Module):
  def __init__(self, rngs):
    self.l = PartitionedLinear(4, 8, rngs=rngs)
    self.b = nnx.BatchStat(jnp.zeros((8,)))


def case_sharded_init_eager_jit_and_eval_shape():
  mesh = _mesh()
  with jax.set_mesh(mesh):
    eager = M(nnx.Rngs(0))
    abstract = nnx.eval_shape(lambda: M(nnx.Rngs(0)))
    jitted = nnx.jit(lambda: M(nnx.Rngs(0)))()
  assert eager.l.kernel[...].sharding.spec == P('data', 'model')
  assert eager.l.bias[...].sharding.spec == P('model')
  assert jitted.l.kernel[...].sharding == NamedSharding(
    mesh, P('data', 'model')
  )
  assert jitted.l.bias[...].sharding.spec == P('model')
  kernel = abstract.l.kernel.get_raw_value()
  assert isinstance(kernel, jax.ShapeDtypeStruct)
  assert kernel.sharding.spec == P('data', 'model')


def case_get_var_pspec_and_partition_specs():
  r = nnx.Param(
    jnp.ones((4, 8)), out_sharding=('embed', 'mlp'), eager_sharding=False
  )
  assert spmd.get_var_pspec(r) == P('embed', 'mlp')
  assert spmd.get_var_pspec(nnx.Param(jnp.ones(2))) == P()
  with nnx.logical_axis_rules([('embed', 'data'), ('mlp', 'model')]):
    assert spmd.get_var_pspec(r) == P('data', 'model')
  r2 = nnx.Param(
    jnp.ones((4, 8)),
    out_sharding=('embed', 'mlp'),
    sharding_rules=[('embed', 'model'), ('mlp', None)],
    eager_sharding=False,
  )
  assert spmd.get_var_pspec(r2) == P('model', None)
  specs = nnx.get_partition_spec(
    nnx.State({'a': r, 'b': nnx.Param(jnp.ones(3)), 'c': jnp.ones(2)})
  )
  assert type(specs['a']) is nnx.Param
  assert specs['a'].get_value() == P('embed', 'mlp')
  assert specs['a'].out_sharding == ('embed', 'mlp')
  assert specs['b'].get_value() == P()
  assert specs['c'] == P()


def case_get_named_sharding():
  mesh = _mesh()
  with jax.set_mesh(mesh):
    state = nnx.state(nnx.eval_shape(lambda: M(nnx.Rngs(0))))
  shardings = nnx.get_named_sharding(state, mesh)
  assert shardings['l']['kernel'].get_value() == NamedSharding(
    mesh, P('data', 'model')
  )
  assert shardings['l']['bias'].get_value() == NamedSharding(mesh, P('model'))
  assert shardings['b'].get_value() == NamedSharding(mesh, P())


def case_as_abstract_and_deprecated_alias():
  mesh = _mesh()
  with jax.set_mesh(mesh):
    concrete = M(nnx.Rngs(0))
  same = nnx.as_abstract(concrete)
  assert same is not concrete
  assert isinstance(same.l.kernel.get_raw_value(), jax.Array)
  with jax.set_mesh(mesh):
    abstract = nnx.eval_shape(lambda: M(nnx.Rngs(0)))
    with warnings.catch_warnings(record=True) as caught:
      warnings.simplefilter('always')
      result = nnx.abstract_with_sharding(abstract)
    assert [w.category for w in caught] == [DeprecationWarning]
    assert 'as_abstract' in str(caught[0].message)
  kernel = result.l.kernel.get_raw_value()
  assert kernel.shape == (4, 8)
  assert kernel.sharding.spec == P('data', 'model')
  assert kernel.sharding.mesh == mesh.abstract_mesh


def case_get_abstract_model():
  mesh = _mesh()
  graphdef, state = nnx.get_abstract_model(lambda: M(nnx.Rngs(0)), mesh)
  assert isinstance(graphdef, nnx.GraphDef)
  kernel = state['l']['kernel'].get_raw_value()
  assert kernel == jax.ShapeDtypeStruct(
    (4, 8), jnp.float32, sharding=NamedSharding(mesh, P('data', 'model'))
  )
  assert state['b'].get_raw_value().sharding == NamedSharding(mesh, P())
  model = nnx.merge(graphdef, state)
  assert model.l.bias.get_raw_value().sharding.spec == P('model')


def case_add_and_remove_axis():
  w = nnx.Param(jnp.ones((3, 4)), out_sharding=('a', 'b'), eager_sharding=False)
  state = nnx.State({'w': w})
  out = spmd.add_axis(state, 0, {nnx.PARTITION_NAME: 'layers'})
  assert out['w'].out_sharding == ('layers', 'a', 'b')
  assert state['w'].out_sharding == ('layers', 'a', 'b')  # in place
  spmd.remove_axis(state, 0, {nnx.PARTITION_NAME: 'layers'})
  assert state['w'].out_sharding == ('a', 'b')
  spmd.add_axis(state, 2, {nnx.PARTITION_NAME: 'x'})
  assert state['w'].out_sharding == ('a', 'b', 'x')
  with pytest.raises(ValueError, match='"partition_name" is not specified'):
    spmd.add_axis(nnx.State({'w': nnx.Param(jnp.ones(2))}), 0, {})
  np.testing.assert_array_equal(state['w'][...], np.ones((3, 4)))


def case_format_out_sharding_places_value_and_layout():
  mesh = jax.make_mesh(
    (2, 4), ('data', 'model'), axis_types=(jax.sharding.AxisType.Auto,) * 2
  )
  ns = NamedSharding(mesh, P('data', None))
  fmt = Format(Layout(major_to_minor=(0, 1)), ns)
  v = nnx.Variable(jnp.ones((4, 8)), out_sharding=fmt)
  assert v.sharding == ns and v.out_sharding is fmt
  assert v[...].format.layout.major_to_minor == (0, 1)
  with jax.set_mesh(mesh):
    assert nnx.Param(jnp.ones((4, 8)), out_sharding=fmt).sharding == ns
  # under tracing it is a sharding (and layout) constraint
  out = jax.jit(lambda x: nnx.Param(x, out_sharding=fmt)[...])(jnp.ones((4, 8)))
  assert out.sharding.spec[0] == 'data'
  assert out.format.layout.major_to_minor == (0, 1)
  # a Format without a sharding cannot place a value
  with pytest.raises(ValueError, match='Sharding has to be concrete'):
    nnx.Variable(jnp.ones((4, 8)), out_sharding=Format(Layout((1, 0))))
  lazy = nnx.Variable(jnp.ones((4, 8)), out_sharding=fmt, eager_sharding=False)
  assert lazy.sharding != ns


def case_module_names():
  assert spmd.eval_shape is nnx.eval_shape
  assert nnx.spmd is spmd
  assert nnx.as_abstract is spmd.as_abstract
  assert nnx.get_abstract_model is spmd.get_abstract_model
  from flax.core import spmd as core_spmd

  assert nnx.logical_axis_rules is core_spmd.logical_axis_rules


def test_eager_sharding_places_variables(results):
  _check(results, 'case_eager_sharding_places_variables')


def test_sharded_init_eager_jit_and_eval_shape(results):
  _check(results, 'case_sharded_init_eager_jit_and_eval_shape')


def test_get_var_pspec_and_partition_specs(results):
  _check(results, 'case_get_var_pspec_and_partition_specs')


def test_get_named_sharding(results):
  _check(results, 'case_get_named_sharding')


def test_as_abstract_and_deprecated_alias(results):
  _check(results, 'case_as_abstract_and_deprecated_alias')


def test_get_abstract_model(results):
  _check(results, 'case_get_abstract_model')


def test_add_and_remove_axis(results):
  _check(results, 'case_add_and_remove_axis')


def test_format_out_sharding_places_value_and_layout(results):
  _check(results, 'case_format_out_sharding_places_value_and_layout')


def test_module_names(results):
  _check(results, 'case_module_names')
