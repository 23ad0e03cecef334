"""Every test whose body uses ``jit`` runs twice: with ``nnx.jit``'s cached
fast path and with the general path only (the results must agree). The
tests run with 8 fake CPU devices."""

import inspect
import os

# 8 fake CPU devices (meshes, pmap, shard_map), effective if no JAX backend
# started before this file is loaded
if 'device_count' not in os.environ.get('XLA_FLAGS', ''):
  os.environ['XLA_FLAGS'] = ' '.join(
    [
      *os.environ.get('XLA_FLAGS', '').split(),
      '--xla_force_host_platform_device_count=8',
    ]
  )

import pytest  # noqa: E402
from flax.nnx.transforms import compilation  # noqa: E402


def pytest_generate_tests(metafunc):
  try:
    source = inspect.getsource(metafunc.function)
  except (OSError, TypeError):
    return
  if 'jit' in source:
    metafunc.fixturenames.append('jit_path')
    metafunc.parametrize('jit_path', ['fast', 'general'])


@pytest.fixture(autouse=True)
def _jit_path_switch(request):
  callspec = getattr(request.node, 'callspec', None)
  path = callspec.params.get('jit_path') if callspec else None
  saved = compilation.FAST_PATH
  compilation.FAST_PATH = path != 'general'
  try:
    yield
  finally:
    compilation.FAST_PATH = saved
