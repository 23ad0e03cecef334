"""Names NNX serves lazily as deprecated aliases (``nnx.VariableState``)."""

import pytest
from flax import nnx


def test_variable_state_is_a_deprecated_alias_of_variable():
  with pytest.warns(DeprecationWarning, match="'VariableState' was removed"):
    alias = nnx.VariableState
  assert alias is nnx.Variable
  assert 'VariableState' not in dir(nnx)


def test_from_import_warns_too():
  with pytest.warns(DeprecationWarning, match='VariableState'):
    from flax.nnx import VariableState
  assert VariableState is nnx.Variable


def test_unknown_names_still_raise():
  with pytest.raises(AttributeError, match='VariableStates'):
    nnx.VariableStates
