"""SpectralNorm and WeightNorm (values settled against Flax 0.12.8)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nnx_layer_helpers import assert_close


def _spectral(**kwargs):
  lin = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
  return lin, nnx.SpectralNorm(lin, rngs=nnx.Rngs(1), **kwargs)


def _stats(module):
  return {
    path: (type(v).__name__, v[...].shape, str(v[...].dtype))
    for path, v in nnx.to_flat_state(nnx.state(module, nnx.BatchStat))
  }


def test_spectral_norm_state():
  _, sn = _spectral()
  assert list(sn.batch_stats) == [('kernel', 'u'), ('kernel', 'sigma')]
  assert _stats(sn) == {
    ('batch_stats', ('kernel', 'sigma')): ('BatchStat', (), 'float32'),
    ('batch_stats', ('kernel', 'u')): ('BatchStat', (1, 4), 'float32'),
  }
  assert_close(
    sn.batch_stats['kernel', 'u'][...],
    [[0.005319, -0.00723, 0.009073, -0.009505]],
    atol=1e-6,
  )
  assert float(sn.batch_stats['kernel', 'sigma'][...]) == 1.0
  assert sn.use_running_average is False
  attrs = [k for k in vars(sn) if not k.startswith('_')]
  assert attrs == [
    'layer_instance',
    'n_steps',
    'epsilon',
    'dtype',
    'param_dtype',
    'error_on_non_matrix',
    'use_running_average',
    'batch_stats',
  ]


def test_spectral_norm_power_iteration_and_update_stats():
  lin, sn = _spectral()
  w0 = np.asarray(lin.kernel[...])
  y = sn(jnp.eye(3))
  # The wrapped layer's kernel is replaced by the normalized one.
  assert_close(lin.kernel[...], w0 * 0.700819, atol=1e-5)
  assert_close(y, w0 * 0.700819, atol=1e-5)
  assert_close(sn.batch_stats['kernel', 'sigma'][...], 1.4269013)
  assert_close(
    sn.batch_stats['kernel', 'u'][...],
    [[0.50173, -0.54358, -0.37974, -0.5555]],
    atol=1e-5,
  )
  u = np.asarray(sn.batch_stats['kernel', 'u'][...])
  sn(jnp.eye(3), update_stats=False)
  assert_close(lin.kernel[...], w0 * 0.503244, atol=1e-5)
  assert_close(sn.batch_stats['kernel', 'sigma'][...], 1.4269013)
  assert_close(sn.batch_stats['kernel', 'u'][...], u, 0, 0)
  sn(jnp.eye(3))
  assert_close(sn.batch_stats['kernel', 'sigma'][...], 1.0)


def test_spectral_norm_options():
  # No power iteration: nothing kept, nothing normalized.
  lin, sn = _spectral(n_steps=0)
  assert sn.batch_stats == {}
  assert_close(sn(jnp.ones((1, 3))), [[1.05335, -1.26799, -0.79601, -1.26194]])
  _, sn = _spectral(update_stats=False)
  assert sn.use_running_average is True
  assert_close(sn(jnp.ones((1, 3))), [[0.73821, -0.88863, -0.55786, -0.88439]])
  assert float(sn.batch_stats['kernel', 'sigma'][...]) == 1.0
  _, sn = _spectral(epsilon=10.0)
  y = sn(jnp.ones((1, 3)))
  assert_close(y, [[112973.91, -135994.78, -85373.59, -135345.75]], rtol=1e-4)
  conv = nnx.Conv(2, 4, (3, 3), rngs=nnx.Rngs(0))
  with pytest.raises(ValueError, match='4D but error_on_non_matrix'):
    nnx.SpectralNorm(conv, error_on_non_matrix=True, rngs=nnx.Rngs(1))
  sn = nnx.SpectralNorm(conv, n_steps=3, rngs=nnx.Rngs(1))
  assert _stats(sn)['batch_stats', ('kernel', 'u')][1] == (1, 4)
  y = sn(jnp.ones((1, 5, 5, 2)))
  assert_close(y[0, 0, 0], [-0.4936, -0.22492, -0.2573, 0.48646], atol=1e-4)
  assert_close(sn.batch_stats['kernel', 'sigma'][...], 1.3854227)


def test_spectral_norm_dtypes():
  lin, sn = _spectral(dtype=jnp.bfloat16, param_dtype=jnp.float16)
  assert _stats(sn)['batch_stats', ('kernel', 'u')][2] == 'float16'
  y = sn(jnp.ones((1, 3)))
  assert lin.kernel[...].dtype == jnp.float32 and y.dtype == jnp.float32
  assert_close(y, [[0.5605469, -0.671875, -0.42382812, -0.6723633]], 0, 1e-7)
  assert _stats(sn)['batch_stats', ('kernel', 'sigma')][2] == 'float16'


def test_spectral_norm_nested_paths_and_grad():
  mha = nnx.MultiHeadAttention(
    2, 4, qkv_features=4, decode=False, rngs=nnx.Rngs(0)
  )
  sn = nnx.SpectralNorm(mha, rngs=nnx.Rngs(1))
  # 2-D biases are normalized too; 1-D ones are not.
  assert ('query', 'bias', 'u') in sn.batch_stats
  assert ('out', 'bias', 'u') not in sn.batch_stats
  assert sn.batch_stats['query', 'kernel', 'u'][...].shape == (1, 2)
  seq = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)))
  sn = nnx.SpectralNorm(seq, rngs=nnx.Rngs(1))
  assert list(sn.batch_stats) == [
    ('layers', 0, 'kernel', 'u'),
    ('layers', 0, 'kernel', 'sigma'),
  ]
  _, sn = _spectral()
  grads = nnx.grad(lambda m: m(jnp.ones((2, 3))).sum())(sn)
  expected = [
    [2.3247, 0.4016, 0.703, 0.3797],
    [1.8255, 0.9424, 1.0808, 0.9324],
    [1.8737, 0.8902, 1.0443, 0.879],
  ]
  assert_close(grads['layer_instance']['kernel'][...], expected, atol=2e-4)
  _, sn = _spectral()
  y = nnx.jit(lambda m, x: m(x))(sn, jnp.ones((1, 3)))
  assert_close(y, [[0.73821, -0.88863, -0.55786, -0.88439]])
  assert_close(sn.batch_stats['kernel', 'sigma'][...], 1.4269015)


def _weight_norm(**kwargs):
  lin = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
  return lin, nnx.WeightNorm(lin, rngs=nnx.Rngs(1), **kwargs)


def test_weight_norm_state_and_call():
  rngs = nnx.Rngs(1)
  lin = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
  wn = nnx.WeightNorm(lin, rngs=rngs)
  assert int(rngs.params.count[...]) == 0
  assert list(wn.scales) == [('kernel',)]
  assert wn.scales['kernel',].shape == (4,)
  state = nnx.to_flat_state(nnx.state(wn))
  assert [path for path, _ in state] == [
    ('layer_instance', 'bias'),
    ('layer_instance', 'kernel'),
    ('scales', ('kernel',)),
  ]
  attrs = [k for k in vars(wn) if not k.startswith('_')]
  assert attrs == [
    'layer_instance',
    'feature_axes',
    'use_scale',
    'scale_init',
    'epsilon',
    'dtype',
    'param_dtype',
    'variable_filter',
    'promote_dtype',
    'scales',
  ]
  w0 = np.asarray(lin.kernel[...])
  y = wn(jnp.eye(3))
  assert_close(lin.kernel[...], w0 / np.linalg.norm(w0, axis=0), atol=1e-6)
  assert_close(y[0], [0.48523, -0.442104, -0.458019, -0.747154], atol=1e-5)
  assert_close(wn(jnp.eye(3)), y, atol=1e-6)
  assert wn(jnp.ones((2, 3)), out_sharding=None).shape == (2, 4)


def test_weight_norm_options():
  x = jnp.ones((1, 3))
  cases = [
    (dict(epsilon=10.0), (4,), [0.30899, -0.37224, -0.2397, -0.38195]),
    (dict(feature_axes=None), (), [0.46329, -0.5577, -0.35011, -0.55504]),
    (dict(feature_axes=0), (3,), [0.57633, -0.75858, -0.41874, -1.17176]),
    (dict(feature_axes=(0, 1)), (3, 4), [1.0, -1.0, -1.0, -1.0]),
  ]
  for kwargs, shape, expected in cases:
    _, wn = _weight_norm(**kwargs)
    assert wn.scales['kernel',].shape == shape
    assert_close(wn(x)[0], expected, atol=1e-5)
  _, wn = _weight_norm(use_scale=False)
  assert wn.scales is None
  assert_close(wn(x)[0], [0.82722855, -1.0012722, -0.7849866, -1.3185902])
  _, wn = _weight_norm(variable_filter=nnx.Param)
  assert list(wn.scales) == [('bias',), ('kernel',)]
  assert_close(wn(x)[0], [0.82723, -1.00127, -0.78499, -1.31859], atol=1e-5)
  lin, wn = _weight_norm(dtype=jnp.bfloat16, param_dtype=jnp.float16)
  assert wn.scales['kernel',].dtype == jnp.float32
  y = wn(x)
  assert lin.kernel[...].dtype == jnp.bfloat16
  assert_close(y[0], [0.82617, -1.0, -0.78516, -1.31885], atol=1e-5)
  with pytest.raises(TypeError):
    _weight_norm(scale_init=nnx.initializers.normal())


def test_weight_norm_conv_and_grad():
  conv = nnx.Conv(2, 4, (3, 3), rngs=nnx.Rngs(0))
  wn = nnx.WeightNorm(conv, rngs=nnx.Rngs(1))
  y = wn(jnp.ones((1, 4, 4, 2)))
  assert_close(
    y.ravel()[:4], [-0.52991, -0.31424, -0.28914, 0.58169], atol=1e-5
  )
  _, wn = _weight_norm()
  grads = nnx.grad(lambda m: m(jnp.ones((2, 3))).sum())(wn)
  expected = [
    [0.9402, 0.8802, 1.2632, 0.0309],
    [2.1205, 2.0374, 2.6589, 0.2742],
    [0.5765, 0.2369, 0.7795, 2.3307],
  ]
  assert_close(grads['layer_instance']['kernel'][...], expected, atol=2e-4)
  y = nnx.jit(lambda m, x: m(x))(wn, jnp.ones((1, 3)))
  assert_close(y, [[0.82723, -1.00127, -0.78499, -1.31859]], atol=1e-5)
  assert isinstance(jax.tree.leaves(nnx.state(wn))[0], jax.Array)


def test_weight_norm_scales_before_casting_to_dtype():
  # The normalized float32 kernel is multiplied by its float32 scale and
  # only then cast to ``dtype`` (float16): one rounding, not two.
  lin = nnx.Linear(8, 4, dtype=jnp.float16, rngs=nnx.Rngs(0))
  w0 = lin.kernel[...]
  wn = nnx.WeightNorm(
    lin,
    scale_init=nnx.initializers.constant(10.0),
    dtype=jnp.float16,
    rngs=nnx.Rngs(1),
  )
  wn(jnp.ones((1, 8)))
  normalized = w0 * jax.lax.rsqrt(jnp.sum(w0 * w0, axis=0, keepdims=True))
  expected = (normalized * 10.0).astype(jnp.float16)
  np.testing.assert_array_equal(lin.kernel[...], expected)
  twice_rounded = normalized.astype(jnp.float16) * jnp.float16(10.0)
  assert not np.array_equal(lin.kernel[...], twice_rounded)

  seen = []

  def promote(args, dtype=None):
    seen.append((len(args), str(args[0].dtype), dtype))
    return tuple(jnp.asarray(a, jnp.bfloat16) for a in args)

  lin = nnx.Linear(8, 4, rngs=nnx.Rngs(0))
  wn = nnx.WeightNorm(
    lin, dtype=jnp.float16, promote_dtype=promote, rngs=nnx.Rngs(1)
  )
  wn(jnp.ones((1, 8)))
  assert seen == [(1, 'float32', jnp.float16)]
  assert lin.kernel[...].dtype == jnp.bfloat16
