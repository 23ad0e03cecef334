"""Test setup of flax-spmd.

Sets 8 fake CPU devices for JAX (effective only if no JAX backend was
started before this file is loaded) and provides ``run_on_8_devices``, a
fixture that runs code in a fresh process with 8 fake CPU devices.
"""

import os
import subprocess
import sys
import textwrap

import pytest

if 'device_count' not in os.environ.get('XLA_FLAGS', ''):
  os.environ['XLA_FLAGS'] = ' '.join(
    [
      *os.environ.get('XLA_FLAGS', '').split(),
      '--xla_force_host_platform_device_count=8',
    ]
  )
os.environ.setdefault('JAX_PLATFORMS', 'cpu')

PRELUDE = """
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
from flax import spmd
from flax.core import meta
assert jax.device_count() == 8, jax.devices()
"""


def _run(code: str) -> str:
  env = dict(os.environ)
  env['XLA_FLAGS'] = '--xla_force_host_platform_device_count=8'
  env['JAX_PLATFORMS'] = 'cpu'
  program = PRELUDE + textwrap.dedent(code)
  result = subprocess.run(
    [sys.executable, '-W', 'error', '-c', program],
    env=env,
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  return result.stdout


@pytest.fixture
def run_on_8_devices():
  """``run(code) -> stdout``: runs code on 8 fake CPU devices."""
  return _run
