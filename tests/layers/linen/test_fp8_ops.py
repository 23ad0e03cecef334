"""flax.linen.fp8_ops: the FP8 dot modules, their state and training.

Expected values were taken from Flax 0.12.8 on the same inputs.
"""

import contextlib
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from flax import linen as nn
from flax.linen import fp8_ops

X = jnp.array([[0.3, -1.7, 2.5], [10.0, 0.01, -3.3]], jnp.float32)
K = jnp.array([[0.5, -0.25], [1.5, 2.0], [-0.75, 3.0]], jnp.float32)
G = jnp.array([[1.0, -2.0], [0.5, 3.0]])
DN = (((1,), (0,)), ((), ()))
OWG = '_overwrite_with_gradient'
STATE_NAMES = [
  'input_amax_history',
  'kernel_amax_history',
  'output_grad_amax_history',
  'input_scale',
  'kernel_scale',
  'output_grad_scale',
]
# The output at fresh state: scales of 1, nothing to learn from history.
FRESH = [[-4.34375, 3.921875], [7.4521484375, -12.23046875]]
GRAD_STATE = {
  'input_amax_history': [10.0, 1.0, 1.5, 0.0],
  'input_scale': [1.5 / 448],
  'kernel_amax_history': [3.0, 1.0, 1.5, 0.0],
  'kernel_scale': [1.5 / 448],
  'output_grad_amax_history': [3.0, 1.0, 1.5, 0.0],
  'output_grad_scale': [1.5 / 57344],
}


def close(a, b, rtol=1e-6):
  np.testing.assert_allclose(np.asarray(a, np.float32), b, rtol=rtol)


def aged(variables):
  """Fresh state plus 0.5 per position (a history of [0, .5, 1, 1.5])."""
  return jax.tree_util.tree_map(
    lambda a: a + jnp.arange(a.shape[0], dtype=a.dtype) * 0.5, variables
  )


def make(cls, **kw):
  if cls is nn.Fp8DotGeneralOp:
    with pytest.warns(DeprecationWarning, match='Fp8DotGeneralOp is deprec'):
      return cls(**kw)
  return cls(**kw)


def test_module_paths_and_exports():
  assert nn.fp8_ops is importlib.import_module('flax.linen.fp8_ops')
  assert nn.fp8_ops is fp8_ops
  assert nn.Fp8DotGeneral is fp8_ops.Fp8DirectDotGeneralOp
  for name in (
    'Fp8DotGeneralOp',
    'Fp8DirectDotGeneralOp',
    'Fp8Einsum',
    'NANOOFp8DotGeneralOp',
  ):
    assert getattr(nn, name) is getattr(fp8_ops, name)
  assert issubclass(nn.NANOOFp8DotGeneralOp, nn.Fp8DotGeneralOp)
  assert fp8_ops.OVERWRITE_WITH_GRADIENT == OWG
  assert repr(nn.NANOOFp8DotGeneralOp()) == (
    'NANOOFp8DotGeneralOp(\n    # attributes\n    amax_history_length = 1024'
    '\n    e4m3_dtype = float8_e4m3fnuz\n    e5m2_dtype = float8_e5m2fnuz\n)'
  )


@pytest.mark.parametrize(
  'cls',
  [nn.Fp8DotGeneral, nn.Fp8DotGeneralOp, nn.NANOOFp8DotGeneralOp],
)
def test_state_tree_and_fresh_output(cls):
  module = make(cls, amax_history_length=4)
  with (
    pytest.warns() if cls is nn.Fp8DotGeneralOp else contextlib.nullcontext()
  ):
    variables = module.init(jax.random.key(0), X, K, DN)
  assert list(variables) == [OWG]
  assert list(variables[OWG]) == STATE_NAMES
  for name, value in variables[OWG].items():
    assert value.dtype == jnp.float32
    if name.endswith('scale'):
      assert value.shape == (1,) and float(value[0]) == 1.0
    else:
      assert value.shape == (4,) and not value.any()
  with (
    pytest.warns() if cls is nn.Fp8DotGeneralOp else contextlib.nullcontext()
  ):
    close(module.apply(variables, X, K, DN), FRESH)
    # precision / preferred_element_type are accepted and not used.
    out = module.apply(
      variables,
      X,
      K,
      DN,
      precision=lax.Precision.HIGHEST,
      preferred_element_type=jnp.bfloat16,
    )
  close(out, FRESH)
  assert out.dtype == jnp.float32


def test_default_history_length():
  variables = nn.Fp8DotGeneral().init(jax.random.key(0), X, K, DN)
  assert variables[OWG]['input_amax_history'].shape == (1024,)


@pytest.mark.parametrize(
  'cls, out, scale',
  [
    (
      nn.Fp8DotGeneral,
      [[-3.232940196990967, -0.07102997601032257], [1.86328125, -2.59654021]],
      1.5 / 448,
    ),
    (
      nn.NANOOFp8DotGeneralOp,
      [[-3.2249999046325684, -0.07500004768371582], [1.89023435, -2.60976553]],
      1.5 / 240,
    ),
  ],
)
def test_delayed_scaling_output_and_state_gradients(cls, out, scale):
  module = cls(amax_history_length=4)
  variables = aged(module.init(jax.random.key(0), X, K, DN))
  close(module.apply(variables, X, K, DN), out)
  grads = jax.grad(lambda v: jnp.sum(module.apply(v, X, K, DN) * G))(variables)
  expected = dict(GRAD_STATE, input_scale=[scale], kernel_scale=[scale])
  for name, value in grads[OWG].items():
    close(value, expected[name], rtol=1e-5)
  # Two uses of one module add their proposals (plain float32 state).
  twice = jax.grad(
    lambda v: (
      jnp.sum(module.apply(v, X, K, DN) * G)
      + jnp.sum(module.apply(v, X * 3, K, DN) * G)
    )
  )(variables)
  close(twice[OWG]['input_amax_history'], [40.0, 2.0, 3.0, 0.0])


def test_deprecated_op_matches_direct_in_float32():
  module = make(nn.Fp8DotGeneralOp, amax_history_length=4)
  with pytest.warns(DeprecationWarning):
    variables = aged(module.init(jax.random.key(0), X, K, DN))
    y = module.apply(variables, X, K, DN)
  close(y, [[-3.23293996, -0.0710299], [1.86328125, -2.59654021]])


def test_compute_dtype_follows_the_kernel():
  module = nn.Fp8DotGeneral(amax_history_length=4)
  variables = module.init(jax.random.key(0), X, K, DN)
  assert module.apply(variables, X, K.astype(jnp.bfloat16), DN).dtype == (
    jnp.bfloat16
  )
  assert module.apply(variables, X.astype(jnp.bfloat16), K, DN).dtype == (
    jnp.float32
  )
  with pytest.raises(AssertionError, match='dimension_numbers'):
    module.apply(variables, X, K)


def test_einsum():
  module = nn.Fp8Einsum(amax_history_length=4)
  variables = module.init(jax.random.key(0), 'ab,bc->ac', X, K)
  assert list(variables[OWG]) == STATE_NAMES
  variables = aged(variables)
  close(
    module.apply(variables, 'ab,bc->ac', X, K),
    [[-3.232940196990967, -0.07102997601032257], [1.86328125, -2.59654021]],
  )
  # For this equation jnp.einsum puts the kernel first, so the "input"
  # state follows the kernel.
  grads = jax.grad(lambda v: jnp.sum(module.apply(v, 'ab,bc->ca', X, K)))(
    variables
  )
  close(grads[OWG]['input_amax_history'], [3.0, 1.0, 1.5, 0.0])
  close(grads[OWG]['kernel_amax_history'], [10.0, 1.0, 1.5, 0.0])
  y = module.apply(variables, 'ab,bc->ac', X, K.astype(jnp.bfloat16))
  assert y.dtype == jnp.bfloat16
  y = module.apply(
    variables, 'ab,bc->ac', X, K, preferred_element_type=jnp.bfloat16
  )
  assert y.dtype == jnp.bfloat16
  with pytest.warns(UserWarning, match='precision'):
    module.apply(variables, 'ab,bc->ac', X, K, precision=lax.Precision.HIGHEST)


def test_dense_and_attention_take_fp8_classes():
  x = jnp.ones((2, 4))
  variables = nn.Dense(3, dot_general_cls=nn.Fp8DotGeneral).init(
    jax.random.key(0), x
  )
  assert list(variables[OWG]) == ['Fp8DirectDotGeneralOp_0']
  assert variables['params']['kernel'].shape == (4, 3)
  mha = nn.MultiHeadDotProductAttention(
    num_heads=2,
    qkv_features=8,
    qk_attn_weights_einsum_cls=nn.Fp8Einsum,
    attn_weights_value_einsum_cls=nn.Fp8Einsum,
  )
  q = jnp.ones((1, 3, 8))
  variables = mha.init(jax.random.key(0), q)
  assert sorted(variables[OWG]) == ['Fp8Einsum_0', 'Fp8Einsum_1']
  assert mha.apply(variables, q).shape == (1, 3, 8)
