"""restore_checkpoint on an Orbax checkpoint whose keys differ from the
target: saved values are placed into the target's structure."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flax
from flax.training import checkpoints


@pytest.fixture
def ckpt_dir(tmp_path):
  with flax.config.temp_flip_flag('use_orbax_checkpointing', True):
    with warnings.catch_warnings():
      warnings.simplefilter('ignore')
      checkpoints.save_checkpoint(
        tmp_path,
        {'a': np.arange(3.0), 'b': {'x': np.ones(2)}, 'n': 5},
        step=1,
      )
    yield tmp_path


def restore(d, target):
  with warnings.catch_warnings():
    warnings.simplefilter('ignore')
    return checkpoints.restore_checkpoint(d, target=target)


def describe(tree):
  def leaf(v):
    if isinstance(v, (np.ndarray, jax.Array)):
      return (type(v).__name__, str(v.dtype), np.asarray(v).tolist())
    return v

  return jax.tree.map(leaf, tree)


def test_extra_target_key_keeps_its_value(ckpt_dir):
  out = restore(ckpt_dir, {'a': np.zeros(3), 'c': np.zeros(1)})
  assert describe(out) == {
    'a': ('ndarray', 'float64', [0.0, 1.0, 2.0]),
    'c': ('ndarray', 'float64', [0.0]),
  }


def test_saved_keys_the_target_lacks_are_dropped(ckpt_dir):
  out = restore(ckpt_dir, {'a': np.zeros(3)})
  assert describe(out) == {'a': ('ndarray', 'float64', [0.0, 1.0, 2.0])}


def test_nested_differences(ckpt_dir):
  target = {'a': np.zeros(3), 'b': {'x': np.zeros(2), 'y': 1}, 'n': 0}
  target['z'] = 'q'
  out = restore(ckpt_dir, target)
  assert describe(out) == {
    'a': ('ndarray', 'float64', [0.0, 1.0, 2.0]),
    'b': {'x': ('ndarray', 'float64', [1.0, 1.0]), 'y': 1},
    'n': ('ndarray', 'int64', 5),
    'z': 'q',
  }


def test_different_nesting_keeps_target_leaves(ckpt_dir):
  out = restore(ckpt_dir, {'a': {'deep': 1}, 'b': 1, 'n': 0})
  assert describe(out) == {
    'a': {'deep': 1},
    'b': 1,
    'n': ('ndarray', 'int64', 5),
  }
  out = restore(ckpt_dir, [np.zeros(3)])
  assert describe(out) == [('ndarray', 'float64', [0.0, 0.0, 0.0])]


def test_jax_array_leaves_stay_jax_arrays(ckpt_dir):
  out = restore(ckpt_dir, {'a': jnp.zeros(3), 'c': jnp.zeros(1)})
  assert describe(out) == {
    'a': ('ArrayImpl', 'float32', [0.0, 1.0, 2.0]),
    'c': ('ArrayImpl', 'float32', [0.0]),
  }
  assert restore(ckpt_dir, {'b': {'x': None}}) == {'b': {'x': None}}
