"""Error paths of nnx functions with Flax 0.12.8's exception classes and
key phrases: filters, shared Variables, Module.sow, dot_product_attention."""

import re
import warnings

import jax.numpy as jnp
import pytest
from flax import nnx


def _linear():
  return nnx.Linear(2, 2, rngs=nnx.Rngs(0))


@pytest.mark.parametrize(
  'fn',
  [
    lambda m: nnx.split(m, ..., nnx.Param),
    lambda m: nnx.state(m, ..., nnx.Param),
    lambda m: nnx.state(m).split(..., nnx.Param),
    lambda m: nnx.split(m, True, nnx.Param),
  ],
)
def test_everything_filter_not_last(fn):
  with pytest.raises(
    ValueError,
    match=re.escape('`...` or `True` can only be used as the last filters'),
  ):
    fn(_linear())


@pytest.mark.parametrize(
  'fn',
  [
    lambda m: nnx.split(m, nnx.BatchStat),
    lambda m: nnx.state(m).split(nnx.BatchStat),
  ],
)
def test_non_exhaustive_filters(fn):
  with pytest.raises(
    ValueError, match='Non-exhaustive filters, got a non-empty remainder'
  ):
    fn(_linear())


def test_shared_variables_converted():
  class M(nnx.Module):
    def __init__(self):
      self.a = nnx.Param(jnp.ones(2))
      self.b = self.a

  with pytest.raises(ValueError, match='Found duplicate at paths'):
    nnx.with_vars(M(), ref=True)


class _Plain(nnx.Module):
  def __init__(self):
    self.v = 3

  def __call__(self):
    self.sow(nnx.Intermediate, 'v', 1.0)


class _Param(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(1))

  def __call__(self):
    self.sow(nnx.Intermediate, 'w', 1.0)


@pytest.mark.parametrize(
  'cls, phrase',
  [
    (_Plain, "Expected 'v' to be a Variable, got int"),
    (_Param, "Expected 'w' to be of type 'Intermediate', got 'Param'"),
  ],
)
def test_sow_errors_come_before_the_deprecation_warning(cls, phrase):
  with warnings.catch_warnings():
    warnings.simplefilter('error')
    with pytest.raises(ValueError, match=re.escape(phrase)):
      cls()()


def test_dot_product_attention_depth_mismatch():
  q = jnp.ones((1, 3, 2, 4))
  k = jnp.ones((1, 3, 2, 5))
  with pytest.raises(
    ValueError,
    match=re.escape(
      'query shape should be [1, -1, -1, 5]: but got (1, 3, 2, 4)'
    ),
  ):
    nnx.dot_product_attention(q, k, k)
