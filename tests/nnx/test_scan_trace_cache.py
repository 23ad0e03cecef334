"""nnx.scan traces its body once per input structure, eagerly and under
an enclosing trace (counts settled against Flax 0.12.8)."""

import jax.numpy as jnp
import pytest
from flax import nnx

MODES = [{}, {'graph': False}, {'graph_updates': False}]


@pytest.mark.parametrize('kw', MODES)
def test_scan_traces_once_per_structure(kw):
  traces = []

  class Cell(nnx.Module):
    def __init__(self, n=4, d=2):
      self.w = nnx.Param(jnp.ones((n, d)))
      self.count = nnx.BatchStat(jnp.zeros(n, jnp.int32))

  @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), **kw)
  def step(c, cell):
    traces.append(1)
    cell.count[...] += 1
    return c * cell.w[...], c.sum()

  cell = Cell()
  c = jnp.ones(2)
  for _ in range(3):
    c, ys = step(c, cell)
  assert len(traces) == 1
  assert c.tolist() == [1.0, 1.0]
  assert ys.tolist() == [2.0, 2.0, 2.0, 2.0]
  assert cell.count[...].tolist() == [3, 3, 3, 3]
  # new shapes: a new trace
  step(jnp.ones(3), Cell(5, 3))
  assert len(traces) == 2

  @nnx.jit
  def outer(c, cell):
    return step(c, cell)

  # same structure and shapes under nnx.jit: the scan's trace is reused
  outer(c, cell)
  outer(c, cell)
  assert len(traces) == 2
  assert cell.count[...].tolist() == [5, 5, 5, 5]


def test_scan_plain_carry_traces_once():
  traces = []

  @nnx.scan
  def step(c, x):
    traces.append(1)
    return c + 1, x * 2

  c = jnp.array(0)
  for _ in range(3):
    c, ys = step(c, jnp.arange(4))
  assert len(traces) == 1
  assert int(c) == 12
  assert ys.tolist() == [0, 2, 4, 6]


def test_scan_module_structure_changes_each_call():
  # graph updates: an attribute added by the body changes the structure,
  # so the next call (new structure) traces again
  traces = []

  class Stack(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones((3, 2)))

  @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
  def step(c, m):
    traces.append(1)
    m.h = nnx.Intermediate(c)
    return c + m.w[...]

  s = Stack()
  c = step(jnp.zeros(2), s)
  assert c.tolist() == [3.0, 3.0]
  assert s.h.shape == (3, 2)
  step(jnp.zeros(2), s)
  step(jnp.zeros(2), s)
  assert len(traces) == 2
