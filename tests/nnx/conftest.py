"""Every test whose body uses ``jit`` runs twice: with ``nnx.jit``'s cached
fast path and with the general path only (the results must agree)."""

import inspect

import pytest
from flax.nnx.transforms import compilation


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
