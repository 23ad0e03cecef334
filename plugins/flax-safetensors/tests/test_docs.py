"""The docstring examples of the plugin run and print what they show."""

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
  'module',
  [
    'flax_safetensors.backend',
    'flax_safetensors.interop',
    'flax_safetensors.mapping',
  ],
)
def test_docstring_examples(module):
  result = doctest.testmod(importlib.import_module(module))
  assert result.attempted >= 1
  assert result.failed == 0
