"""flax.nnx.training.* are aliases of flax-training's modules; without
flax-training the error names the distribution."""

import importlib
import sys

import pytest


def test_missing_flax_training_names_the_distribution(monkeypatch):
  monkeypatch.delitem(sys.modules, 'flax.nnx.training.ema', raising=False)
  monkeypatch.setitem(sys.modules, 'flax.training.nnx.ema', None)
  with pytest.raises(ModuleNotFoundError, match="'flax-training'"):
    importlib.import_module('flax.nnx.training.ema')
