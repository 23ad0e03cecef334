"""Flat PyTorch-style weight views of NNX and Linen models, and back."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import safetensors.numpy
from flax import linen as nn
from flax import nnx

from flax_safetensors import flatten_weights
from flax_safetensors import load_file
from flax_safetensors import save_file
from flax_safetensors import torch_name
from flax_safetensors import unflatten_weights


class Net(nnx.Module):
  """Embedding, LayerNorm and two Linear layers (a PyTorch MLP's names)."""

  def __init__(self, rngs, dtype=jnp.float32):
    self.emb = nnx.Embed(10, 8, param_dtype=dtype, rngs=rngs)
    self.norm = nnx.LayerNorm(8, param_dtype=dtype, rngs=rngs)
    self.fc1 = nnx.Linear(8, 16, param_dtype=dtype, rngs=rngs)
    self.fc2 = nnx.Linear(16, 4, param_dtype=dtype, rngs=rngs)

  def __call__(self, tokens):
    x = self.norm(self.emb(tokens))
    return self.fc2(nnx.relu(self.fc1(x)))


class ConvNet(nnx.Module):
  """Conv2d, BatchNorm2d (eval mode) and a Linear head."""

  def __init__(self, rngs):
    self.conv = nnx.Conv(3, 5, (3, 3), padding='VALID', rngs=rngs)
    self.bn = nnx.BatchNorm(5, use_running_average=True, rngs=rngs)
    self.head = nnx.Linear(5, 2, rngs=rngs)

  def __call__(self, x):
    x = self.bn(self.conv(x))
    return self.head(x.mean(axis=(1, 2)))


def _bytes(tree):
  return [
    (np.asarray(x).dtype, np.asarray(x).tobytes())
    for x in jax.tree.leaves(tree)
  ]


def test_torch_names_and_layouts_of_an_nnx_model():
  model = ConvNet(nnx.Rngs(0))
  flat = flatten_weights(nnx.state(model))
  assert {k: v.shape for k, v in flat.items()} == {
    'bn.bias': (5,),
    'bn.running_mean': (5,),
    'bn.running_var': (5,),
    'bn.weight': (5,),
    'conv.bias': (5,),
    'conv.weight': (5, 3, 3, 3),
    'head.bias': (2,),
    'head.weight': (2, 5),
  }
  np.testing.assert_array_equal(
    flat['conv.weight'], np.transpose(model.conv.kernel[...], (3, 2, 0, 1))
  )
  np.testing.assert_array_equal(flat['head.weight'], model.head.kernel[...].T)
  assert all(v.flags.c_contiguous for v in flat.values())


@pytest.mark.parametrize('dtype', [jnp.float32, jnp.bfloat16, jnp.float16])
def test_nnx_round_trip_is_bit_exact(tmp_path, dtype):
  model = Net(nnx.Rngs(0), dtype)
  state = nnx.state(model)
  path = tmp_path / 'model.safetensors'
  save_file(state, path)
  abstract = nnx.eval_shape(lambda: Net(nnx.Rngs(1), dtype))
  graphdef, target = nnx.split(abstract)
  loaded = nnx.merge(graphdef, load_file(path, target))
  assert loaded.fc1.kernel[...].dtype == dtype
  assert _bytes(nnx.state(loaded)) == _bytes(state)
  tokens = jnp.array([[1, 2, 9]])
  assert jnp.array_equal(loaded(tokens), model(tokens))
  # The same through the in-memory view, in Flax's own names and layouts.
  flat = flatten_weights(state, mapping=None)
  assert sorted(flat)[:3] == ['emb.embedding', 'fc1.bias', 'fc1.kernel']
  again = unflatten_weights(flat, target, mapping=None)
  assert _bytes(again) == _bytes(state)


class LinenNet(nn.Module):
  @nn.compact
  def __call__(self, x, tokens):
    x = nn.Conv(4, (3, 3), padding='VALID', param_dtype=jnp.bfloat16)(x)
    x = nn.BatchNorm(use_running_average=True)(x)
    x = nn.Dense(3, param_dtype=jnp.float16)(x.mean(axis=(1, 2)))
    e = nn.LayerNorm()(nn.Embed(6, 3)(tokens))
    return x + e.sum(axis=1)


def test_linen_round_trip_is_bit_exact(tmp_path):
  x, tokens = jnp.ones((1, 5, 5, 2)), jnp.array([[0, 5]])
  variables = LinenNet().init(jax.random.key(0), x, tokens)
  params = variables['params']
  flat = flatten_weights(params)
  assert {k: (v.shape, v.dtype.name) for k, v in flat.items()} == {
    'BatchNorm_0.bias': ((4,), 'float32'),
    'BatchNorm_0.weight': ((4,), 'float32'),
    'Conv_0.bias': ((4,), 'bfloat16'),
    'Conv_0.weight': ((4, 2, 3, 3), 'bfloat16'),
    'Dense_0.bias': ((3,), 'float16'),
    'Dense_0.weight': ((3, 4), 'float16'),
    'Embed_0.weight': ((6, 3), 'float32'),
    'LayerNorm_0.bias': ((3,), 'float32'),
    'LayerNorm_0.weight': ((3,), 'float32'),
  }
  stats = flatten_weights(variables['batch_stats'])
  assert sorted(stats) == [
    'BatchNorm_0.running_mean',
    'BatchNorm_0.running_var',
  ]
  path = tmp_path / 'linen.safetensors'
  save_file(params, path)
  abstract = jax.eval_shape(lambda: params)
  restored = load_file(path, abstract)
  assert jax.tree.structure(restored) == jax.tree.structure(params)
  assert _bytes(restored) == _bytes(params)
  out = LinenNet().apply(
    {'params': restored, 'batch_stats': variables['batch_stats']}, x, tokens
  )
  assert jnp.array_equal(out, LinenNet().apply(variables, x, tokens))


def _torch_mlp(rng):
  return {
    'emb.weight': rng.normal(size=(10, 8)).astype(np.float32),
    'norm.weight': rng.normal(size=(8,)).astype(np.float32),
    'norm.bias': rng.normal(size=(8,)).astype(np.float32),
    'fc1.weight': rng.normal(size=(16, 8)).astype(np.float32),
    'fc1.bias': rng.normal(size=(16,)).astype(np.float32),
    'fc2.weight': rng.normal(size=(4, 16)).astype(np.float32),
    'fc2.bias': rng.normal(size=(4,)).astype(np.float32),
  }


def _numpy_mlp(w, tokens):
  x = w['emb.weight'][tokens]
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  x = (x - mean) / np.sqrt(var + 1e-6) * w['norm.weight'] + w['norm.bias']
  h = np.maximum(x @ w['fc1.weight'].T + w['fc1.bias'], 0)
  return h @ w['fc2.weight'].T + w['fc2.bias']


def test_pytorch_layout_file_loads_into_nnx_model(tmp_path):
  weights = _torch_mlp(np.random.default_rng(0))
  path = tmp_path / 'model.safetensors'
  safetensors.numpy.save_file(weights, path)
  graphdef, target = nnx.split(nnx.eval_shape(lambda: Net(nnx.Rngs(0))))
  model = nnx.merge(graphdef, load_file(path, target))
  tokens = np.array([[0, 3, 9], [7, 7, 1]])
  np.testing.assert_allclose(
    model(jnp.asarray(tokens)),
    _numpy_mlp(weights, tokens),
    rtol=2e-5,
    atol=2e-5,
  )
  # Exported again, the file matches what was read, name for name.
  flat = flatten_weights(nnx.state(model))
  assert sorted(flat) == sorted(weights)
  for name, value in weights.items():
    assert flat[name].tobytes() == value.tobytes(), name


def _numpy_convnet(w, x):
  kernel = w['conv.weight']  # (out, in, kh, kw)
  _, _, kh, kw = kernel.shape
  n, h, wd, _ = x.shape
  out = np.zeros((n, h - kh + 1, wd - kw + 1, kernel.shape[0]), np.float32)
  for i in range(out.shape[1]):
    for j in range(out.shape[2]):
      patch = x[:, i : i + kh, j : j + kw, :]  # (n, kh, kw, in)
      out[:, i, j, :] = np.einsum('nhwc,ochw->no', patch, kernel)
  out += w['conv.bias']
  out = (out - w['bn.running_mean']) / np.sqrt(w['bn.running_var'] + 1e-5)
  out = out * w['bn.weight'] + w['bn.bias']
  return out.mean(axis=(1, 2)) @ w['head.weight'].T + w['head.bias']


def test_pytorch_conv_and_batchnorm_file(tmp_path):
  rng = np.random.default_rng(1)
  weights = {
    'conv.weight': rng.normal(size=(5, 3, 3, 3)).astype(np.float32),
    'conv.bias': rng.normal(size=(5,)).astype(np.float32),
    'bn.weight': rng.normal(size=(5,)).astype(np.float32),
    'bn.bias': rng.normal(size=(5,)).astype(np.float32),
    'bn.running_mean': rng.normal(size=(5,)).astype(np.float32),
    'bn.running_var': rng.uniform(0.5, 2, size=(5,)).astype(np.float32),
    'bn.num_batches_tracked': np.array(12, np.int64),
    'head.weight': rng.normal(size=(2, 5)).astype(np.float32),
    'head.bias': rng.normal(size=(2,)).astype(np.float32),
  }
  path = tmp_path / 'convnet.safetensors'
  safetensors.numpy.save_file(weights, path)
  graphdef, target = nnx.split(nnx.eval_shape(lambda: ConvNet(nnx.Rngs(0))))
  model = nnx.merge(graphdef, load_file(path, target))
  x = rng.normal(size=(2, 6, 7, 3)).astype(np.float32)
  np.testing.assert_allclose(
    model(jnp.asarray(x)), _numpy_convnet(weights, x), rtol=1e-4, atol=1e-4
  )


class LinenConvNet(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = nn.Conv(5, (3, 3), padding='VALID', name='conv')(x)
    x = nn.BatchNorm(use_running_average=True, name='bn')(x)
    return nn.Dense(2, name='head')(x.mean(axis=(1, 2)))


def test_pytorch_file_loads_into_a_linen_model(tmp_path):
  rng = np.random.default_rng(2)
  weights = {
    'conv.weight': rng.normal(size=(5, 3, 3, 3)).astype(np.float32),
    'conv.bias': rng.normal(size=(5,)).astype(np.float32),
    'bn.weight': rng.normal(size=(5,)).astype(np.float32),
    'bn.bias': rng.normal(size=(5,)).astype(np.float32),
    'bn.running_mean': rng.normal(size=(5,)).astype(np.float32),
    'bn.running_var': rng.uniform(0.5, 2, size=(5,)).astype(np.float32),
    'head.weight': rng.normal(size=(2, 5)).astype(np.float32),
    'head.bias': rng.normal(size=(2,)).astype(np.float32),
  }
  path = tmp_path / 'convnet.safetensors'
  tracked = {'bn.num_batches_tracked': np.array(3, np.int64)}
  safetensors.numpy.save_file({**weights, **tracked}, path)
  x = rng.normal(size=(2, 6, 7, 3)).astype(np.float32)
  abstract = jax.eval_shape(LinenConvNet().init, jax.random.key(0), x)

  # Linen keeps the statistics in their own collection: a mapping that
  # leaves out the collection name loads all variables at once, strictly.
  def without_collection(path, shape):
    return torch_name(path[1:], shape)

  variables = load_file(path, abstract, mapping=without_collection)
  assert sorted(variables) == ['batch_stats', 'params']
  out = LinenConvNet().apply(variables, x)
  np.testing.assert_allclose(
    out, _numpy_convnet(weights, x), rtol=1e-4, atol=1e-4
  )
  flat = flatten_weights(variables, mapping=without_collection)
  assert sorted(flat) == sorted(weights)
  assert flat['conv.weight'].tobytes() == weights['conv.weight'].tobytes()


def test_shape_mismatch_names_the_key_and_both_shapes(tmp_path):
  weights = _torch_mlp(np.random.default_rng(0))
  weights['fc1.weight'] = np.zeros((16, 9), np.float32)
  _, target = nnx.split(nnx.eval_shape(lambda: Net(nnx.Rngs(0))))
  message = re.escape(
    "Shape mismatch for 'fc1.kernel': the weights hold 'fc1.weight' with "
    "shape (16, 9), (9, 16) in the target's layout, but the target expects "
    '(8, 16).'
  )
  with pytest.raises(ValueError, match=message):
    unflatten_weights(weights, target)
  path = tmp_path / 'bad.safetensors'
  safetensors.numpy.save_file(weights, path)
  with pytest.raises(ValueError, match=message):
    load_file(path, target)


def test_missing_and_unmapped_names():
  weights = _torch_mlp(np.random.default_rng(0))
  _, target = nnx.split(nnx.eval_shape(lambda: Net(nnx.Rngs(0))))
  del weights['norm.bias']
  with pytest.raises(
    KeyError, match=re.escape("'norm.bias' (shape (8,)) maps to 'norm.bias'")
  ):
    unflatten_weights(weights, target)
  table = {'fc1.kernel': 'a', 'fc1.bias': 'b'}
  with pytest.raises(
    KeyError, match=re.escape("'emb.embedding' (shape (10, 8)) has no name")
  ):
    flatten_weights(target, mapping=table)
  with pytest.raises(
    ValueError, match="'emb.embedding' and 'fc1.bias' the same name 'same'"
  ):
    flatten_weights(target, mapping=lambda path, shape: 'same')


def test_unused_weights_are_refused_unless_not_strict():
  weights = _torch_mlp(np.random.default_rng(0))
  weights['extra.weight'] = np.zeros(3, np.float32)
  weights['norm.num_batches_tracked'] = np.array(1)  # PyTorch's, skipped
  _, target = nnx.split(nnx.eval_shape(lambda: Net(nnx.Rngs(0))))
  with pytest.raises(
    ValueError, match=r"1 weights are not used .*'extra.weight'"
  ):
    unflatten_weights(weights, target)
  state = unflatten_weights(weights, target, strict=False)
  np.testing.assert_array_equal(state['fc2']['bias'][...], weights['fc2.bias'])


def test_user_mappings():
  weights = {
    f'encoder.{k}': v for k, v in _torch_mlp(np.random.default_rng(0)).items()
  }
  _, target = nnx.split(nnx.eval_shape(lambda: Net(nnx.Rngs(0))))

  def prefixed(path, shape):
    name, perm = torch_name(path, shape)
    return f'encoder.{name}', perm

  state = unflatten_weights(weights, target, mapping=prefixed)
  np.testing.assert_array_equal(
    state['fc1']['kernel'][...], weights['encoder.fc1.weight'].T
  )
  table = {'fc1.kernel': ('w1', (1, 0)), 'fc1.bias': 'b1'}
  params = {'fc1': {'kernel': np.ones((2, 3)), 'bias': np.zeros(3)}}
  flat = flatten_weights(params, mapping=table)
  assert {k: v.shape for k, v in flat.items()} == {'b1': (3,), 'w1': (3, 2)}
  with pytest.raises(ValueError, match='not one of its 2 axes'):
    flatten_weights(
      params, mapping={'fc1.kernel': ('w', (0, 2)), 'fc1.bias': 'b'}
    )


def test_non_array_leaves_are_refused():
  with pytest.raises(TypeError, match="'opt.count' is a int, not weights"):
    flatten_weights({'opt': {'count': 3}})
  model = nnx.Dropout(0.5, rngs=nnx.Rngs(0))
  with pytest.raises(
    TypeError, match=r"'rngs.key' is a PRNG key array, not weights"
  ):
    flatten_weights(nnx.state(model))


def test_checkpoint_of_an_nnx_state_restores_into_an_abstract_one(tmp_path):
  from flax.training import checkpoints

  model = Net(nnx.Rngs(0), jnp.bfloat16)
  checkpoints.save_checkpoint(
    tmp_path, nnx.state(model), 1, backend='safetensors'
  )
  graphdef, target = nnx.split(
    nnx.eval_shape(lambda: Net(nnx.Rngs(1), jnp.bfloat16))
  )
  state = checkpoints.restore_checkpoint(
    tmp_path, target, backend='safetensors'
  )
  assert isinstance(state, nnx.State)
  assert _bytes(state) == _bytes(nnx.state(model))
  restored = nnx.merge(graphdef, state)
  assert isinstance(restored.fc1.kernel[...], jax.Array)
  flat = safetensors.numpy.load_file(
    tmp_path / 'checkpoint_1' / 'model.safetensors'
  )
  assert sorted(flat)[:3] == ['emb.embedding', 'fc1.bias', 'fc1.kernel']
