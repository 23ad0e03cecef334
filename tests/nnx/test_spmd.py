"""flax.nnx.spmd and eager sharding on a 2x4 CPU mesh (Flax 0.12.8
behaviour). Run with 8 host devices
(XLA_FLAGS=--xla_force_host_platform_device_count=8)."""

import warnings

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from flax import nnx
from flax.nnx import spmd
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

pytestmark = pytest.mark.skipif(
  jax.device_count() < 8, reason='needs 8 devices (XLA_FLAGS host devices)'
)


@pytest.fixture
def mesh():
  return jax.make_mesh((2, 4), ('data', 'model'))


def test_eager_sharding_places_variables(mesh):
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


class M(nnx.Module):
  def __init__(self, rngs):
    self.l = nnx.Linear(
      4,
      8,
      kernel_init=nnx.with_partitioning(
        nnx.initializers.lecun_normal(), ('data', 'model')
      ),
      bias_init=nnx.with_partitioning(
        nnx.initializers.zeros_init(), ('model',)
      ),
      rngs=rngs,
    )
    self.b = nnx.BatchStat(jnp.zeros((8,)))


def test_sharded_init_eager_jit_and_eval_shape(mesh):
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


def test_get_var_pspec_and_partition_specs():
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


def test_get_named_sharding(mesh):
  with jax.set_mesh(mesh):
    state = nnx.state(nnx.eval_shape(lambda: M(nnx.Rngs(0))))
  shardings = nnx.get_named_sharding(state, mesh)
  assert shardings['l']['kernel'].get_value() == NamedSharding(
    mesh, P('data', 'model')
  )
  assert shardings['l']['bias'].get_value() == NamedSharding(mesh, P('model'))
  assert shardings['b'].get_value() == NamedSharding(mesh, P())


def test_as_abstract_and_deprecated_alias(mesh):
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


def test_get_abstract_model(mesh):
  graphdef, state = nnx.get_abstract_model(lambda: M(nnx.Rngs(0)), mesh)
  assert isinstance(graphdef, nnx.GraphDef)
  kernel = state['l']['kernel'].get_raw_value()
  assert kernel == jax.ShapeDtypeStruct(
    (4, 8), jnp.float32, sharding=NamedSharding(mesh, P('data', 'model'))
  )
  assert state['b'].get_raw_value().sharding == NamedSharding(mesh, P())
  model = nnx.merge(graphdef, state)
  assert model.l.bias.get_raw_value().sharding.spec == P('model')


def test_add_and_remove_axis():
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


def test_optimizer_state_keeps_sharding(mesh):
  import optax

  with jax.set_mesh(mesh):
    model = M(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
  mu = optimizer.opt_state[0].mu['l']['kernel']
  assert mu.out_sharding == ('data', 'model')
  assert mu[...].sharding.spec == P('data', 'model')


def test_module_names():
  assert spmd.eval_shape is nnx.eval_shape
  assert nnx.spmd is spmd
  assert nnx.as_abstract is spmd.as_abstract
  assert nnx.get_abstract_model is spmd.get_abstract_model
  from flax.core import spmd as core_spmd

  assert nnx.logical_axis_rules is core_spmd.logical_axis_rules
