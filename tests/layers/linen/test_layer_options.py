"""Linen layer options: promote_dtype, einsum bias layout, one-row Embed,
ConvTranspose accumulation dtype and float32 reductions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import linen as nn
from flax.linen import dtypes

KEY = jax.random.key(0)


@pytest.mark.parametrize(
  'layer,x',
  [
    (lambda pd: nn.Dense(3, promote_dtype=pd), jnp.ones((2, 4))),
    (lambda pd: nn.ConvLocal(3, (2,), promote_dtype=pd), jnp.ones((1, 5, 4))),
  ],
)
def test_promote_dtype_field_is_called(layer, x):
  calls = []

  def pd(*args, **kwargs):
    calls.append(([None if a is None else a.shape for a in args], kwargs))
    return dtypes.promote_dtype(*args, **kwargs)

  m = layer(pd)
  m.init(KEY, x)
  shapes, kwargs = calls[0]
  assert len(shapes) == 3 and shapes[0] == x.shape
  assert kwargs == {'dtype': None}


def test_promote_dtype_default_and_repr():
  assert nn.Dense.promote_dtype is dtypes.promote_dtype
  assert 'promote_dtype = promote_dtype' in repr(nn.Dense(3))


def test_embed_promote_dtype_calls():
  calls = []

  def pd(*args, **kwargs):
    calls.append((len(args), kwargs))
    return dtypes.promote_dtype(*args, **kwargs)

  e = nn.Embed(5, 3, promote_dtype=pd)
  v = e.init(KEY, jnp.arange(3))
  e.apply(v, jnp.ones((2, 3)), method='attend')
  assert calls == [
    (1, {'dtype': None, 'inexact': False}),
    (2, {'dtype': None}),
  ]


@pytest.mark.parametrize(
  'shape,eq,xs,bias',
  [
    ((6, 4, 7), 'bd,hdk->bkh', (2, 4), (7, 6)),
    ((3, 4, 5), 'nd,...de->n...e', (2, 4), (3, 5)),
  ],
)
def test_einsum_bias_follows_output_order(shape, eq, xs, bias):
  m = nn.Einsum(shape, eq)
  x = jnp.ones(xs)
  v = m.init(KEY, x)
  assert v['params']['bias'].shape == bias
  v = jax.tree_util.tree_map(jnp.ones_like, v)
  y = m.apply(v, x)
  np.testing.assert_allclose(y, jnp.einsum(eq, x, jnp.ones(shape)) + 1)


def test_one_row_embed_broadcasts_its_row():
  e = nn.Embed(1, 2)
  v = e.init(KEY, jnp.arange(1))
  y = e.apply(v, jnp.array([0, 1, -1]))
  row = np.asarray(v['params']['embedding'][0])
  np.testing.assert_array_equal(y, np.stack([row] * 3))


def test_conv_transpose_preferred_element_type():
  m = nn.ConvTranspose(
    2, (2,), preferred_element_type=jnp.float32, dtype=jnp.bfloat16
  )
  v = m.init(KEY, jnp.ones((1, 3, 2)))
  assert m.apply(v, jnp.ones((1, 3, 2))).dtype == jnp.float32


@pytest.mark.parametrize('cls', [nn.LayerNorm, nn.GroupNorm])
def test_force_float32_reductions(cls):
  # Values of Flax 0.12.8: bfloat16 statistics lose the small deviations.
  x = jnp.array([[300.0, 301.0, 302.0, 304.0]], jnp.bfloat16)
  kw = {'num_groups': 1} if cls is nn.GroupNorm else {}
  low = cls(force_float32_reductions=False, **kw)
  y = low.apply(low.init(KEY, x), x)
  np.testing.assert_array_equal(y, [[-2000.0, -2000.0, 0.0, 2000.0]])
  full = cls(**kw)
  y = full.apply(full.init(KEY, x), x)
  np.testing.assert_allclose(
    y, [[-0.9045339, -0.9045339, 0.3015113, 1.5075564]], rtol=1e-5
  )
