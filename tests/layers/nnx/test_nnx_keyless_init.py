"""Parameters whose initializer never reads its key (``zeros``, ``ones``)
leave the ``params`` stream where a draw leaves it: the count and every
later key are those of Flax 0.12.8, eagerly, under ``nnx.eval_shape`` and
``nnx.jit``, and for hijax and ref Variables (settled with the oracle)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx


def _build(rngs):
  """Linear (kernel, zero bias), LayerNorm (ones, zeros), RMSNorm (ones),
  LinearGeneral (kernel, zero bias): seven parameters."""
  return (
    nnx.Linear(3, 4, rngs=rngs),
    nnx.LayerNorm(4, rngs=rngs),
    nnx.RMSNorm(4, rngs=rngs),
    nnx.LinearGeneral((2, 3), 4, axis=(-2, -1), rngs=rngs),
  )


def _expected_kernel(seed, count, shape):
  key = jax.random.fold_in(jax.random.key(seed), count)
  return jax.nn.initializers.lecun_normal()(key, shape, jnp.float32)


def test_count_and_later_keys_as_drawn():
  rngs = nnx.Rngs(0)
  linear, norm, rms, general = _build(rngs)
  assert int(rngs.params.count[...]) == 7
  np.testing.assert_array_equal(linear.bias[...], np.zeros(4))
  np.testing.assert_array_equal(norm.scale[...], np.ones(4))
  np.testing.assert_array_equal(rms.scale[...], np.ones(4))
  # the kernels take keys 0 (Linear) and 5 (LinearGeneral, after the
  # four keyless parameters)
  np.testing.assert_array_equal(
    linear.kernel[...], _expected_kernel(0, 0, (3, 4))
  )
  np.testing.assert_array_equal(
    general.kernel[...].reshape(6, 4), _expected_kernel(0, 5, (6, 4))
  )
  later = nnx.Linear(2, 2, rngs=rngs)
  np.testing.assert_allclose(
    later.kernel[...],
    [[-0.04802268, -1.0707891], [-0.6764756, -0.07875979]],
    rtol=1e-6,
  )


def test_eval_shape_and_jit_keep_the_stream():
  def build():
    rngs = nnx.Rngs(params=1)
    return nnx.Linear(2, 3, rngs=rngs), rngs

  linear, rngs = nnx.eval_shape(build)
  assert rngs.params.count.shape == ()
  assert linear.bias.shape == (3,)

  @nnx.jit
  def create():
    rngs = nnx.Rngs(3)
    return nnx.Linear(2, 2, rngs=rngs), rngs

  linear, rngs = create()
  assert int(rngs.default.count[...]) == 2
  np.testing.assert_allclose(
    linear.kernel[...],
    [[-1.4996907, -1.218814], [-0.37564087, -0.72711825]],
    rtol=1e-6,
  )


@pytest.mark.parametrize('defaults', [{'hijax': True}, {'ref': True}])
def test_hijax_and_ref_streams(defaults):
  with nnx.var_defaults(**defaults):
    rngs = nnx.Rngs(0)
    linear = nnx.Linear(3, 4, rngs=rngs)
    nnx.LayerNorm(4, rngs=rngs)
    assert int(rngs.params.count[...]) == 4
    np.testing.assert_allclose(
      float(linear.kernel[...].sum()), -2.2725942, rtol=1e-6
    )


def test_custom_initializer_still_gets_its_own_key():
  keys = []

  def bias_init(key, shape, dtype):
    keys.append(key)
    return jnp.zeros(shape, dtype)

  rngs = nnx.Rngs(0)
  nnx.Linear(3, 4, bias_init=bias_init, rngs=rngs)
  assert int(rngs.params.count[...]) == 2
  np.testing.assert_array_equal(
    jax.random.key_data(keys[0]),
    jax.random.key_data(jax.random.fold_in(jax.random.key(0), 1)),
  )
