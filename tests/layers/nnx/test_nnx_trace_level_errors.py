"""Mutating an NNX object from inside a JAX transform it was not passed
to: Flax 0.12.8's TraceContextError and key phrase."""

import re

import jax
import pytest
from flax import errors, nnx


def test_dict_mutated_from_another_trace_level():
  d = nnx.Dict(a=1)

  def f(x):
    d['b'] = x
    return x

  with pytest.raises(
    errors.TraceContextError,
    match=re.escape("Cannot mutate 'Dict' from different trace level"),
  ):
    jax.jit(f)(1.0)


def test_module_mutated_from_another_trace_level():
  m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

  def f(x):
    m.extra = x
    return x

  with pytest.raises(
    errors.TraceContextError,
    match=re.escape("Cannot mutate 'Linear' from different trace level"),
  ):
    jax.jit(f)(1.0)
