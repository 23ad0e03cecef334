"""flax.training submodules as attributes, checkpoints.config, orbax_utils
helpers."""

import os
import subprocess
import sys
import textwrap

import numpy as np

import flax
import jax.numpy as jnp


def test_submodules_load_on_attribute_access():
  import flax.training

  assert flax.training.train_state.TrainState.__name__ == 'TrainState'
  assert {'checkpoints', 'train_state', 'orbax_utils'} <= set(
    dir(flax.training)
  )


def test_checkpoints_config_is_flax_config():
  from flax.training import checkpoints

  assert checkpoints.config is flax.config


def test_orbax_utils_helpers():
  from flax.training import orbax_utils

  assert orbax_utils.is_multi_device_array(jnp.ones(3)) is False
  assert orbax_utils.is_multi_device_array(np.ones(3)) is False
  assert orbax_utils.maybe_construct_transformations({'a': 1}, None) == {}
  given = {'x': 1}
  assert orbax_utils.maybe_construct_transformations(None, given) is given
  fallback = orbax_utils.maybe_construct_transformations(None, None)
  assert list(fallback) == ['']
  assert fallback[''].use_fallback is True


SHARDED = textwrap.dedent(
  """
  import jax, jax.numpy as jnp
  from jax.sharding import NamedSharding, PartitionSpec as P
  from flax.training import orbax_utils
  mesh = jax.make_mesh((2, 2), ('x', 'y'))
  split = jax.device_put(jnp.ones((2, 4)), NamedSharding(mesh, P('x')))
  copied = jax.device_put(jnp.ones((2, 4)), NamedSharding(mesh, P()))
  print(orbax_utils.is_multi_device_array(split),
        orbax_utils.is_multi_device_array(copied))
  """
)


def test_is_multi_device_array_on_four_devices():
  env = dict(os.environ)
  env['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'
  env['JAX_PLATFORMS'] = 'cpu'
  result = subprocess.run(
    [sys.executable, '-c', SHARDED], env=env, capture_output=True, text=True
  )
  assert result.returncode == 0, result.stderr
  assert result.stdout.split() == ['True', 'False']
