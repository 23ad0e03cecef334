"""nnx.dot_product_attention operand errors: ValueErrors (never a bare
assert) with Flax 0.12.8's messages, for the fused path (no dropout, no
module) and the general one."""

import jax
import jax.numpy as jnp
import pytest
from flax import nnx

o = jnp.ones
GENERAL = {'module': nnx.Module()}


@pytest.mark.parametrize(
  'shapes, kwargs, message',
  [
    (
      ((1, 4, 2, 8), (1, 4, 2, 6), (1, 4, 2, 6)),
      {},
      r'query shape should be \[1, -1, -1, 6\]: but got \(1, 4, 2, 8\)',
    ),
    (
      ((1, 4, 2, 8), (1, 4, 2, 6), (1, 4, 2, 8)),
      {},
      r'value shape should be \[1, 4, 2, 6\]: but got \(1, 4, 2, 8\)',
    ),
    (
      ((3, 2, 4, 2, 8), (3, 2, 4, 2, 6), (3, 2, 4, 2, 6)),
      {},
      r'query shape should be \[6, -1, -1, 6\]: but got \(6, 4, 2, 8\)',
    ),
    (
      ((4, 2, 8), (4, 2, 8), (4, 2, 6)),
      {},
      r'value shape should be \[1, 4, 2, 8\]: but got \(1, 4, 2, 6\)',
    ),
    (
      ((1, 4, 2, 8), (1, 4, 3, 8), (1, 4, 3, 8)),
      {},
      'The number of query heads must be a multiple of key/value heads, '
      'but got 2 vs 3',
    ),
    (
      ((1, 4, 2, 8), (1, 4, 2, 6), (1, 4, 2, 6)),
      GENERAL,
      r'q, k depths must match, but got 8 and 6\.',
    ),
    (
      ((1, 4, 2, 8), (1, 4, 2, 6), (1, 4, 2, 6)),
      {'dropout_rate': 0.5, 'deterministic': True},
      r'q, k depths must match, but got 8 and 6\.',
    ),
    (
      ((1, 4, 2, 8), (1, 4, 3, 8), (1, 4, 3, 8)),
      GENERAL,
      r'Query heads \(2\) must be multiple of Key heads \(3\)',
    ),
    (
      ((1, 4, 4, 8), (1, 4, 2, 8), (1, 4, 3, 8)),
      GENERAL,
      r'Query heads \(4\) must be multiple of Value heads \(3\)',
    ),
    (
      ((1, 4, 2, 8), (4, 3, 8), (1, 4, 3, 8)),
      {},
      r'q, k, v must have same rank, but got 4, 3, 4\.',
    ),
    (
      ((1, 4, 2, 8), (2, 4, 3, 8), (1, 4, 3, 8)),
      GENERAL,
      r'q, k, v batch dims must match, but got shapes \(1, 4, 2, 8\), '
      r'\(2, 4, 3, 8\), \(1, 4, 3, 8\)\.',
    ),
    (
      ((1, 4, 2, 8), (1, 5, 2, 6), (1, 4, 2, 6)),
      {},
      r'k, v lengths must match, but got 5 and 4\.',
    ),
  ],
)
def test_operand_errors(shapes, kwargs, message):
  q, k, v = map(o, shapes)
  with pytest.raises(ValueError, match=message):
    nnx.dot_product_attention(q, k, v, **kwargs)


def test_general_path_repeats_key_and_value_heads_separately():
  q = jax.random.normal(jax.random.key(0), (1, 4, 4, 8))
  k = jax.random.normal(jax.random.key(1), (1, 4, 2, 8))
  v = jax.random.normal(jax.random.key(2), (1, 4, 1, 6))
  general = {'dropout_rate': 0.5, 'deterministic': True}
  out = nnx.dot_product_attention(q, k, v, **general)
  expected = nnx.dot_product_attention(
    q, jnp.repeat(k, 2, axis=-2), jnp.repeat(v, 4, axis=-2), **general
  )
  assert out.shape == (1, 4, 4, 6)
  assert jnp.allclose(out, expected, atol=1e-6)
