"""``axes_scan.scan`` without the constancy check: one trace of the body."""

import jax.numpy as jnp
import pytest

from flax.core import axes_scan


def test_one_trace_and_broadcast_inputs_back_unchanged():
  traces = []

  def body(bcast, c, x):
    traces.append(None)
    return {'made': c}, c + x * bcast['w'], c

  scan = axes_scan.scan(
    body, in_axes=0, out_axes=0, check_constancy_invariants=False
  )
  bcast_out, c, ys = scan({'w': 2.0}, jnp.zeros(()), jnp.ones(3))
  assert len(traces) == 1
  assert bcast_out == {'w': 2.0}
  assert (float(c), ys.tolist()) == (6.0, [0.0, 2.0, 4.0])


def test_broadcast_out_axes_need_the_check():
  def body(bcast, c, x):
    return (), c, c

  scan = axes_scan.scan(
    body,
    in_axes=0,
    out_axes=axes_scan.broadcast,
    check_constancy_invariants=False,
  )
  with pytest.raises(ValueError, match='does not support broadcast non-carry'):
    scan((), jnp.zeros(()), jnp.ones(3))
