"""One source of truth for names: the first-party export table (every
package installed).

The lazy names of flax.linen / flax.nnx, the subpackages of ``flax``, the
"install X" hints and the alias module paths all come from the ``Export``
records of ``flax.plugins.first_party_exports``.
"""

import importlib
import os
import subprocess
import sys

import pytest

import flax
from flax import plugins

DISTRIBUTIONS = sorted(plugins.FIRST_PARTY)


@pytest.mark.parametrize('dist', DISTRIBUTIONS)
def test_plugins_return_their_part_of_the_table(dist):
  reg = plugins.registry()
  ours = {(d, e) for d, e in reg.exports() if d == dist}
  assert ours == {(dist, e) for e in plugins.first_party_exports(dist)}


def test_every_export_is_listed_once():
  keys = [
    (e.namespace, e.name)
    for dist in DISTRIBUTIONS
    for e in plugins.first_party_exports(dist)
  ]
  assert len(keys) == len(set(keys))


def test_flax_subpackages_come_from_the_table():
  assert flax._providers()['linen'] == 'flax-linen'
  assert flax._providers()['jax_utils'] == 'flax-training'
  assert set(flax._providers()) <= set(dir(flax))


@pytest.mark.parametrize(
  'path, attr',
  [
    ('flax.linen.linear', ('flax.linen', 'linear')),
    ('flax.linen.initializers', ('flax.linen', 'initializers')),
    ('flax.linen.partitioning', ('flax.linen', 'partitioning')),
    ('flax.linen.spmd', ('flax.linen', 'spmd')),
    ('flax.nnx.initializers', ('flax.nnx', 'initializers')),
  ],
)
def test_alias_paths_are_one_module_object(path, attr):
  namespace = importlib.import_module(attr[0])
  module = importlib.import_module(path)
  assert getattr(namespace, attr[1]) is module
  assert sys.modules[path] is module
  assert module.__name__ != path  # the provider's module itself


def test_alias_path_reached_first_by_import_statement():
  code = (
    'import flax.linen.linear as a\n'
    'from flax import linen as nn\n'
    'from flax.linen.linear import Dense\n'
    'print(a is nn.linear, Dense is nn.Dense, a.__name__)\n'
  )
  out = subprocess.run(
    [sys.executable, '-c', code], capture_output=True, text=True, check=True
  ).stdout
  assert out.split() == ['True', 'True', 'flax.layers.linen.linear']


def test_namespace_own_names_load_without_plugin_discovery():
  code = (
    'from flax import nnx, plugins\n'
    'from flax.plugins import _registry\n'
    'nnx.jit, nnx.helpers\n'
    'print(_registry._registry is None)\n'
  )
  out = subprocess.run(
    [sys.executable, '-c', code], capture_output=True, text=True, check=True
  ).stdout
  assert out.strip() == 'True'


def test_missing_provider_is_named_from_the_table():
  # flax-layers switched off and reported as not installed: the table
  # still knows that it provides nn.Dense and nnx.Linear.
  code = (
    'from flax.plugins import _namespace\n'
    '_namespace._installed = lambda dist: False\n'
    'from flax import linen as nn, nnx\n'
    'for ns, name in ((nn, "Dense"), (nnx, "Linear"), (nn, "linear")):\n'
    '  try:\n'
    '    getattr(ns, name)\n'
    '  except AttributeError as e:\n'
    '    print("flax-layers" in str(e))\n'
    'try:\n'
    '  import flax.linen.linear\n'
    'except ModuleNotFoundError as e:\n'
    '  print("flax-layers" in str(e))\n'
  )
  out = subprocess.run(
    [sys.executable, '-c', code],
    capture_output=True,
    text=True,
    check=True,
    env={**os.environ, 'FLAX_DISABLE_PLUGINS': 'flax-layers'},
  ).stdout
  assert out.split() == ['True'] * 4
