"""flax.experimental.nnx: the NNX API under its older path."""

import jax.numpy as jnp
import pytest

from flax import nnx


def test_old_path_gives_the_nnx_names():
  from flax.experimental import nnx as old

  assert old.__name__ == 'flax.experimental.nnx'
  assert old is not nnx
  assert old.Module is nnx.Module and old.Param is nnx.Param
  assert old.split is nnx.split
  assert {'Module', 'Rngs', 'jit', 'split'} <= set(dir(old))

  class Counter(old.Module):
    def __init__(self):
      self.count = old.BatchStat(jnp.array(0))

  graphdef, state = old.split(Counter())
  assert old.merge(graphdef, state).count[...] == 0
  with pytest.raises(AttributeError):
    old.NotAName


def test_experimental_package_lists_nnx():
  import flax
  import flax.experimental

  assert [k for k in vars(flax.experimental) if not k.startswith('__')] == [
    'nnx'
  ]
  assert 'experimental' in dir(flax)
  assert flax.experimental.nnx.Module is nnx.Module
