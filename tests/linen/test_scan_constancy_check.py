"""``nn.scan(..., check_constancy_invariants=False)``: one pass (Flax 0.12.8).

Without the check the body is traced once (no first pass looks for the
broadcast outputs), so it draws its keys first and what it would make or
change in broadcast collections is dropped.
"""

import jax
import jax.numpy as jnp
import pytest

from flax import linen as nn


class KeyCell(nn.Module):
  @nn.compact
  def __call__(self, c, x):
    return c, jax.random.key_data(self.make_rng('params'))


class TwoKeys(nn.Module):
  @nn.compact
  def __call__(self, x):
    first = jax.random.key_data(self.make_rng('params'))
    return first, jax.random.key_data(self.make_rng('params'))


def _scanned_keys(check):
  class Top(nn.Module):
    @nn.compact
    def __call__(self, x):
      scan = nn.scan(
        KeyCell, variable_axes={'params': 0}, split_rngs={'params': False},
        length=2, check_constancy_invariants=check,
      )  # fmt: skip
      return scan()(jnp.zeros(()), x)[1]

  keys, _ = Top().init_with_output(jax.random.key(0), jnp.ones(2))
  return keys


def test_keys_drawn_without_a_first_pass():
  class Top(nn.Module):
    @nn.compact
    def __call__(self, x):
      return TwoKeys(name='ScanKeyCell_0')(x)

  (first, second), _ = Top().init_with_output(jax.random.key(0), 1.0)
  # The checked scan's first pass draws the first key.
  assert _scanned_keys(True).tolist() == [second.tolist()] * 2
  assert _scanned_keys(False).tolist() == [first.tolist()] * 2


def test_traced_once():
  traces = {True: 0, False: 0}

  def make(check):
    class Cell(nn.Module):
      @nn.compact
      def __call__(self, c, x):
        traces[check] += 1
        w = self.param('w', jax.nn.initializers.ones, ())
        return c + w * x, x

    return nn.scan(
      Cell, variable_axes={'params': 0}, split_rngs={'params': False},
      check_constancy_invariants=check,
    )  # fmt: skip

  for check in (True, False):
    make(check)().init(jax.random.key(0), jnp.zeros(()), jnp.ones(3))
  assert traces == {True: 2, False: 1}


class StatCell(nn.Module):
  @nn.compact
  def __call__(self, c, x):
    w = self.param('w', jax.nn.initializers.ones, ())
    s = self.variable('stats', 's', jnp.zeros, ())
    if not self.is_initializing():
      s.value = s.value + 1
    return c + w * x, x * 2


def _broadcast_scan(check, out_axes=0):
  return nn.scan(
    StatCell, variable_broadcast=['params', 'stats'],
    split_rngs={'params': False}, length=2,
    check_constancy_invariants=check, out_axes=out_axes,
  )()  # fmt: skip


def _values(tree):
  return jax.tree_util.tree_map(lambda a: a.tolist(), tree)


@pytest.mark.parametrize(
  'check, initialized, counted',
  [(True, {'w': 1.0}, 1.0), (False, None, 0.0)],
)
def test_broadcast_collections_come_back_unchanged(check, initialized, counted):
  carry, xs = jnp.zeros(()), jnp.ones(2)
  variables = _broadcast_scan(check).init(jax.random.key(0), carry, xs)
  if initialized is None:
    assert variables == {}
  else:
    assert _values(variables['params']) == initialized
  given = {'params': {'w': jnp.ones(())}, 'stats': {'s': jnp.zeros(())}}
  (c, ys), updated = _broadcast_scan(check).apply(
    given, carry, xs, mutable='stats'
  )
  assert (float(c), ys.tolist()) == (2.0, [2.0, 2.0])
  assert _values(updated) == {'stats': {'s': counted}}


def test_broadcast_outputs_need_the_check():
  given = {'params': {'w': jnp.ones(())}, 'stats': {'s': jnp.zeros(())}}
  scan = _broadcast_scan(False, out_axes=nn.broadcast)
  with pytest.raises(
    ValueError, match='does not support broadcast non-carry function outputs'
  ):
    scan.apply(given, jnp.zeros(()), jnp.ones(2))
