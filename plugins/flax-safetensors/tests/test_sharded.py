"""Loading into an abstract, sharded model on 8 CPU devices: each device
reads only its slice of each array from the file."""

import jax
import numpy as np
import pytest
import safetensors.numpy
from flax import nnx
from flax.training import checkpoints
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from flax_safetensors import _files
from flax_safetensors import load_file
from flax_safetensors import unflatten_weights


def _mesh(axis_type=jax.sharding.AxisType.Explicit):
  assert jax.device_count() == 8
  return jax.make_mesh(
    (2, 4), ('data', 'model'), axis_types=(axis_type, axis_type)
  )


class ShardedMLP(nnx.Module):
  def __init__(self, rngs):
    init = nnx.initializers.lecun_normal()
    self.fc1 = nnx.Linear(
      8,
      16,
      kernel_init=nnx.with_partitioning(init, (None, 'model')),
      bias_init=nnx.with_partitioning(nnx.initializers.zeros, ('model',)),
      rngs=rngs,
    )
    self.fc2 = nnx.Linear(
      16, 4, kernel_init=nnx.with_partitioning(init, ('model', None)), rngs=rngs
    )

  def __call__(self, x):
    return self.fc2(nnx.relu(self.fc1(x)))


def _weights():
  rng = np.random.default_rng(0)
  return {
    'fc1.weight': rng.normal(size=(16, 8)).astype(np.float32),
    'fc1.bias': rng.normal(size=(16,)).astype(np.float32),
    'fc2.weight': rng.normal(size=(4, 16)).astype(np.float32),
    'fc2.bias': rng.normal(size=(4,)).astype(np.float32),
  }


@pytest.fixture
def reads(monkeypatch):
  """``(name, shape)`` of every read from a safetensors file."""
  seen = []
  real = _files.SafetensorsFile.read

  def spy(self, name, index=None):
    out = real(self, name, index)
    seen.append((name, out.shape))
    return out

  monkeypatch.setattr(_files.SafetensorsFile, 'read', spy)
  return seen


def _check_placed(state, weights, mesh):
  kernel = state['fc1']['kernel'][...]
  assert kernel.sharding == NamedSharding(mesh, P(None, 'model'))
  assert {s.data.shape for s in kernel.addressable_shards} == {(8, 4)}
  np.testing.assert_array_equal(kernel, weights['fc1.weight'].T)
  bias = state['fc1']['bias'][...]
  assert bias.sharding == NamedSharding(mesh, P('model'))
  np.testing.assert_array_equal(bias, weights['fc1.bias'])
  fc2 = state['fc2']['kernel'][...]
  assert fc2.sharding == NamedSharding(mesh, P('model', None))
  np.testing.assert_array_equal(fc2, weights['fc2.weight'].T)


def test_abstract_model_under_a_mesh(tmp_path, reads):
  mesh = _mesh()
  weights = _weights()
  path = tmp_path / 'mlp.safetensors'
  safetensors.numpy.save_file(weights, path)
  with jax.set_mesh(mesh):
    abstract = nnx.eval_shape(lambda: ShardedMLP(nnx.Rngs(0)))
    graphdef, target = nnx.split(abstract)
    state = load_file(path, target)
  _check_placed(state, weights, mesh)
  # No device read a whole sharded tensor: fc1.weight (16, 8) came in
  # slices of 4 output rows, fc2.weight (4, 16) in slices of 4 columns.
  assert {s for n, s in reads if n == 'fc1.weight'} == {(4, 8)}
  assert {s for n, s in reads if n == 'fc1.bias'} == {(4,)}
  assert {s for n, s in reads if n == 'fc2.weight'} == {(4, 4)}
  assert {s for n, s in reads if n == 'fc2.bias'} == {(4,)}
  # Outside the mesh, the target's abstract shardings cannot be placed.
  with pytest.raises(ValueError, match=r'abstract mesh .*jax.set_mesh'):
    load_file(path, target)


def test_explicit_shardings(tmp_path, reads):
  mesh = _mesh(jax.sharding.AxisType.Auto)
  weights = _weights()
  with jax.set_mesh(mesh):
    abstract = nnx.eval_shape(lambda: ShardedMLP(nnx.Rngs(0)))
  graphdef, target = nnx.split(abstract)
  shardings = nnx.get_named_sharding(target, mesh)
  path = tmp_path / 'mlp.safetensors'
  safetensors.numpy.save_file(weights, path)
  state = load_file(path, target, shardings=shardings)
  _check_placed(state, weights, mesh)
  assert {s for n, s in reads if n == 'fc1.weight'} == {(4, 8)}
  model = nnx.merge(graphdef, state)
  x = np.ones((2, 8), np.float32)
  with jax.set_mesh(mesh):
    y = model(jax.device_put(x, NamedSharding(mesh, P())))
  h = np.maximum(x @ weights['fc1.weight'].T + weights['fc1.bias'], 0)
  want = h @ weights['fc2.weight'].T + weights['fc2.bias']
  np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
  # One sharding for every array; the flat-dict form places the same way.
  replicated = NamedSharding(mesh, P())
  state = unflatten_weights(weights, target, shardings=replicated)
  assert state['fc2']['bias'][...].sharding == replicated
  np.testing.assert_array_equal(state['fc2']['bias'][...], weights['fc2.bias'])


def test_checkpoint_restore_into_sharded_abstract_target(tmp_path, reads):
  mesh = _mesh()
  tree = {'w': np.arange(64, dtype=np.float32).reshape(8, 8), 'step': 3}
  checkpoints.save_checkpoint(tmp_path, tree, 3, backend='safetensors')
  target = {
    'w': jax.ShapeDtypeStruct(
      (8, 8), np.float32, sharding=NamedSharding(mesh, P('data', 'model'))
    ),
    'step': 0,
  }
  reads.clear()
  restored = checkpoints.restore_checkpoint(
    tmp_path, target, backend='safetensors'
  )
  assert restored['step'] == 3
  assert restored['w'].sharding == target['w'].sharding
  np.testing.assert_array_equal(restored['w'], tree['w'])
  assert {s for n, s in reads} == {(4, 2)}
  bad = {
    **target,
    'w': jax.ShapeDtypeStruct(
      (8, 4), np.float32, sharding=target['w'].sharding
    ),
  }
  with pytest.raises(
    ValueError, match=r"'w' has shape \(8, 8\) but the target asks for \(8, 4\)"
  ):
    checkpoints.restore_checkpoint(tmp_path, bad, backend='safetensors')
