"""Tests of flax.core.nn, the functional layers on Scope."""

import hashlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax.core import apply, init
from flax.core import nn as core_nn

KEY = jax.random.PRNGKey(0)


def shapes(tree):
  return jax.tree_util.tree_map(jnp.shape, tree)


def test_dense_names_shapes_and_values():
  x = jnp.arange(6.0).reshape(2, 3)
  y, variables = init(core_nn.dense)(KEY, x, 4)
  assert shapes(variables) == {'params': {'bias': (4,), 'kernel': (3, 4)}}
  p = variables['params']
  np.testing.assert_allclose(y, x @ p['kernel'] + p['bias'][None], rtol=1e-6)
  np.testing.assert_allclose(p['bias'], 0.0)
  # lecun_normal: std ~ 1/sqrt(fan_in), kernel drawn with the first key
  h = int.from_bytes(hashlib.sha1(b'\x01').digest()[:4], 'big')
  expected = jax.nn.initializers.lecun_normal()(
    jax.random.fold_in(KEY, np.uint32(h)), (3, 4)
  )
  np.testing.assert_allclose(p['kernel'], expected, rtol=1e-6)
  y, v = init(core_nn.dense)(KEY, x, 4, bias=False)
  assert set(v['params']) == {'kernel'}


def test_dense_general():
  x = jnp.ones((2, 3, 4))
  y, v = init(core_nn.dense_general)(KEY, x, (5, 6), axis=(1, 2))
  assert y.shape == (2, 5, 6)
  k, b = v['params']['kernel'], v['params']['bias']
  assert k.shape == (3, 4, 5, 6) and b.shape == (5, 6)
  np.testing.assert_allclose(
    y, jnp.einsum('bij,ijkl->bkl', x, k) + b[None], rtol=1e-5
  )
  with pytest.raises(ValueError):
    init(core_nn.dense_general)(KEY, x, 3, batch_dims=(0,))


def test_conv_matches_lax():
  x = jax.random.normal(KEY, (1, 6, 6, 3))
  y, v = init(core_nn.conv)(KEY, x, 4, (3, 3), strides=(2, 2), padding='VALID')
  k = v['params']['kernel']
  assert k.shape == (3, 3, 3, 4) and y.shape == (1, 2, 2, 4)
  ref = jax.lax.conv_general_dilated(
    x, k, (2, 2), 'VALID', dimension_numbers=('NHWC', 'HWIO', 'NHWC')
  )
  np.testing.assert_allclose(
    y, ref + v['params']['bias'][None, None, None], rtol=1e-5
  )
  y1, v1 = init(core_nn.conv)(KEY, jnp.ones((1, 5, 2)), 3, 2)
  assert v1['params']['kernel'].shape == (2, 2, 3) and y1.shape == (1, 5, 3)
  with pytest.raises(ValueError, match='feature_group_count'):
    init(core_nn.conv)(KEY, jnp.ones((1, 5, 3)), 4, 3, feature_group_count=2)


def test_conv_transpose_shape():
  y, v = init(core_nn.conv_transpose)(
    KEY, jnp.ones((1, 4, 4, 2)), 3, (3, 3), strides=(2, 2)
  )
  assert y.shape == (1, 8, 8, 3)
  assert v['params']['kernel'].shape == (3, 3, 2, 3)


def test_embedding_lookup_and_attend():
  def f(scope, ids, q):
    emb = core_nn.embedding(scope, 10, 3)
    return emb.lookup(ids), emb.attend(q)

  ids = jnp.array([1, 4])
  (rows, logits), v = init(f)(KEY, ids, jnp.ones((2, 3)))
  table = v['params']['embedding']
  assert table.shape == (10, 3)
  np.testing.assert_allclose(rows, table[ids])
  np.testing.assert_allclose(logits, jnp.ones((2, 3)) @ table.T, rtol=1e-6)


def test_batch_norm_statistics_and_running_average():
  x = jax.random.normal(KEY, (8, 3)) * 2.0 + 1.0
  y, v = init(core_nn.batch_norm)(KEY, x)
  assert shapes(v) == {
    'batch_stats': {'mean': (3,), 'var': (3,)},
    'params': {'bias': (3,), 'scale': (3,)},
  }
  # No running-stat update while initializing.
  np.testing.assert_allclose(v['batch_stats']['mean'], 0.0)
  ref = (x - x.mean(0, keepdims=True)) / jnp.sqrt(
    x.var(0, keepdims=True) + 1e-5
  )
  np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
  y, state = apply(core_nn.batch_norm, mutable='batch_stats')(v, x)
  np.testing.assert_allclose(
    state['batch_stats']['mean'], 0.01 * x.mean(0), rtol=1e-4
  )
  np.testing.assert_allclose(
    state['batch_stats']['var'], 0.99 + 0.01 * x.var(0), rtol=1e-4
  )
  y_eval = apply(core_nn.batch_norm)(v, x, use_running_average=True)
  np.testing.assert_allclose(y_eval, x / jnp.sqrt(1 + 1e-5), rtol=1e-5)


def test_layer_norm_and_group_norm():
  x = jax.random.normal(KEY, (2, 4, 6))
  y, v = init(core_nn.layer_norm)(KEY, x)
  ref = (x - x.mean(-1, keepdims=True)) / jnp.sqrt(
    x.var(-1, keepdims=True) + 1e-6
  )
  np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
  assert shapes(v) == {'params': {'bias': (6,), 'scale': (6,)}}
  y, v = init(core_nn.group_norm)(KEY, x, num_groups=3)
  g = x.reshape(2, 4, 3, 2)
  ref = (
    (g - g.mean((1, 3), keepdims=True))
    / jnp.sqrt(g.var((1, 3), keepdims=True) + 1e-6)
  ).reshape(x.shape)
  np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
  with pytest.raises(ValueError, match='does not divide'):
    init(core_nn.group_norm)(KEY, x, num_groups=4)


def test_dropout():
  f = apply(lambda s, x, **kw: core_nn.dropout(s, x, 0.5, **kw))
  x = jnp.ones((100,))
  y = f({}, x, rngs={'dropout': KEY})
  assert set(np.unique(np.asarray(y)).tolist()) == {0.0, 2.0}
  np.testing.assert_array_equal(f({}, x, deterministic=True), x)
  np.testing.assert_array_equal(
    apply(lambda s, x: core_nn.dropout(s, x, 0.0))({}, x), x
  )
  y2 = f({}, x, rng=jax.random.PRNGKey(3))
  keep = jax.random.bernoulli(jax.random.PRNGKey(3), 0.5, (100,))
  np.testing.assert_array_equal(y2, jnp.where(keep, 2.0, 0.0))
  with pytest.raises(ValueError):
    apply(lambda s, x: core_nn.dropout(s, x, 1.5))({}, x)


def test_attention():
  x = jax.random.normal(KEY, (2, 5, 8))
  y, v = init(core_nn.multi_head_dot_product_attention)(
    KEY, x, x, num_heads=2, deterministic=True
  )
  assert y.shape == (2, 5, 8)
  p = v['params']
  assert p['query']['kernel'].shape == (8, 2, 4)
  assert p['out']['kernel'].shape == (2, 4, 8)
  q = jnp.einsum('bld,dhk->blhk', x, p['query']['kernel'])
  k = jnp.einsum('bld,dhk->blhk', x, p['key']['kernel'])
  val = jnp.einsum('bld,dhk->blhk', x, p['value']['kernel'])
  w = jax.nn.softmax(jnp.einsum('bqhd,bkhd->bhqk', q, k) / 2.0)
  out = jnp.einsum('bhqk,bkhd->bqhd', w, val)
  ref = jnp.einsum('bqhd,hdo->bqo', out, p['out']['kernel'])
  np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
  with pytest.raises(AssertionError, match='divisible'):
    init(core_nn.multi_head_dot_product_attention)(KEY, x, x, num_heads=3)


def test_activations_reexported():
  np.testing.assert_array_equal(
    core_nn.relu(jnp.array([-1.0, 2.0])), [0.0, 2.0]
  )
  assert core_nn.softmax is jax.nn.softmax


def test_pooling():
  x = jnp.arange(32.0).reshape(1, 4, 4, 2)
  y = core_nn.avg_pool(x, (2, 2))
  assert y.shape == (1, 3, 3, 2)
  np.testing.assert_allclose(
    y[0, :, :, 0], [[5.0, 7.0, 9.0], [13.0, 15.0, 17.0], [21.0, 23.0, 25.0]]
  )
  m = core_nn.max_pool(x, (2, 2), strides=(1, 1), padding='SAME')
  np.testing.assert_allclose(m[0, :, 3, 1], [15.0, 23.0, 31.0, 31.0])
  no_pad = core_nn.avg_pool(x, (3, 3), padding='SAME', count_include_pad=False)
  np.testing.assert_allclose(no_pad[0, 0, :, 0], [5.0, 6.0, 8.0, 9.0])
  pad = core_nn.avg_pool(x, (3, 3), padding='SAME')
  np.testing.assert_allclose(
    pad[0, 0, :, 0], [2.2222223, 4.0, 5.3333335, 4.0], rtol=1e-6
  )
  assert core_nn.avg_pool(x[0], (2, 2)).shape == (3, 3, 2)
  seq = core_nn.max_pool(
    jnp.arange(6.0).reshape(1, 6, 1), (2,), padding=((1, 1),)
  )
  assert seq[0, :, 0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 5.0]


def test_initializers_activation_group_size_embedding():
  init_mod = core_nn.initializers
  assert init_mod.zeros_init()(KEY, (2,)).tolist() == [0.0, 0.0]
  assert init_mod.ones_init()(KEY, (2,)).tolist() == [1.0, 1.0]
  np.testing.assert_allclose(
    init_mod.lecun_normal()(KEY, (2, 2)),
    [[1.1704054, 1.3784391], [-0.3317383, -0.0603173]],
    rtol=1e-5,
  )
  act = core_nn.activation
  assert act.relu6(jnp.array([-1.0, 7.0])).tolist() == [0.0, 6.0]
  assert act.hard_tanh(jnp.array([-2.0, 0.5])).tolist() == [-1.0, 0.5]
  y, _ = init(
    lambda s, x: core_nn.group_norm(s, x, num_groups=None, group_size=2)
  )(KEY, jnp.arange(8.0).reshape(1, 8))
  np.testing.assert_allclose(y[0, :2], [-0.999998, 0.999998], rtol=1e-5)
  with pytest.raises(ValueError, match='not both'):
    init(lambda s, x: core_nn.group_norm(s, x, num_groups=2, group_size=2))(
      KEY, jnp.ones((1, 8))
    )

  def emb(scope):
    e = core_nn.embedding(scope, 3, 2)
    return e.replace(table=jnp.zeros((1, 1))).table.shape

  assert init(emb)(KEY)[0] == (1, 1)


def test_group_norm_params_keep_the_input_rank():
  _, v = init(lambda s, x: core_nn.group_norm(s, x, num_groups=2))(
    KEY, jnp.ones((1, 8))
  )
  assert shapes(v) == {'params': {'bias': (1, 8), 'scale': (1, 8)}}
