"""Rngs misuse: streams mutated from another trace level, and calling,
forking or splitting a stream that already holds split keys."""

import jax
import jax.numpy as jnp
import pytest
from flax import errors, nnx


def _closure_jit(fn):
  return jax.jit(lambda: jax.random.key_data(fn()))


@pytest.mark.parametrize(
  'use',
  [
    lambda r: r(),
    lambda r: r.params(),
    lambda r: r.params.fork().key[...],
    lambda r: r.fork().default.key[...],
    lambda r: r.split(2).default.key[...],
  ],
)
def test_stream_used_inside_jit_from_closure(use):
  rngs = nnx.Rngs(0)
  with pytest.raises(
    errors.TraceContextError,
    match='Cannot mutate RngCount from a different trace level',
  ):
    _closure_jit(lambda: use(rngs))()
  # the failed trace did not advance the stream
  assert int(rngs.default.count[...]) == 0


def test_stream_used_inside_vmap_from_closure():
  rngs = nnx.Rngs(0)
  with pytest.raises(errors.TraceContextError, match='Cannot mutate RngCount'):
    jax.vmap(lambda x: jax.random.key_data(rngs()) + x)(jnp.ones(2, jnp.uint32))


def test_variable_message_names_the_type():
  p = nnx.Param(jnp.array(0.0))
  with pytest.raises(
    errors.TraceContextError,
    match='Cannot mutate Param from a different trace level',
  ):
    jax.jit(lambda: p.__setitem__(..., 1.0))()


def test_rngs_passed_as_argument_is_fine():
  rngs = nnx.Rngs(0)
  out = jax.jit(lambda r: jax.random.key_data(r()))(rngs)
  assert out.shape == (2,)
  out = nnx.jit(lambda r: jax.random.key_data(r()))(rngs)
  assert out.shape == (2,)
  assert int(rngs.default.count[...]) == 1


@pytest.mark.parametrize(
  'use',
  [
    lambda r: r(),
    lambda r: r.fork(),
    lambda r: r.default.fork(),
    lambda r: r.split(2),
    lambda r: nnx.split_rngs(r, splits=2),
  ],
)
def test_split_stream_then_fork_or_call(use):
  rngs = nnx.Rngs(0)
  nnx.split_rngs(rngs, splits=2)
  with pytest.raises(ValueError, match='fold_in accepts a single key'):
    use(rngs)


def test_split_rngs_object_then_fork():
  split = nnx.Rngs(0).split(3)
  with pytest.raises(ValueError, match='fold_in accepts a single key'):
    split.fork()
  with pytest.raises(ValueError, match='fold_in accepts a single key'):
    split()
