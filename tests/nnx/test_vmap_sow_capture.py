"""Module.sow in nested Modules inside nnx.vmap under nnx.capture: the
sown values come back batched per Module path in every mode (the captures
start without leaves and gain them inside)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

MODES = {
  'graph': dict(),
  'no_updates': dict(graph_updates=False),
  'tree': dict(graph=False),
}


class Leaf(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(6.0).reshape(3, 2))

  def __call__(self, x):
    self.sow(nnx.Intermediate, 'h', x * self.w)
    return x * self.w


class Tree(nnx.Module):
  def __init__(self):
    self.sub = Leaf()
    self.count = nnx.BatchStat(jnp.zeros((3,)))

  def __call__(self, x):
    self.sow(nnx.Intermediate, 'o', x.sum())
    return self.sub(x)


@pytest.mark.parametrize('mode', sorted(MODES))
def test_nested_sows_batched(mode):
  f = nnx.vmap(lambda m, x: m(x), in_axes=(0, 0), **MODES[mode])
  m = Tree()
  y, inter = nnx.capture(f, nnx.Intermediate)(m, jnp.ones((3, 2)))
  np.testing.assert_allclose(y, np.arange(6.0).reshape(3, 2))
  shapes = jax.tree.map(lambda a: a.shape, inter.to_pure_dict())
  assert shapes == {'o': ((3,),), 'sub': {'h': ((3, 2),)}}
  np.testing.assert_allclose(inter['o'].get_value()[0], [2.0, 2.0, 2.0])
  assert sorted(k for k in vars(m) if not k.startswith('_')) == ['count', 'sub']


def test_state_axes_broadcasting_the_captures_is_a_batching_error():
  ax = nnx.StateAxes({(nnx.Param, nnx.BatchStat): 0, ...: None})
  f = nnx.vmap(lambda m, x: m(x), in_axes=(ax, 0))
  with pytest.raises(ValueError, match='got axis spec None but output was'):
    nnx.capture(f, nnx.Intermediate)(Tree(), jnp.ones((3, 2)))
