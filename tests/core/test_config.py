"""Tests of flax.config / flax.configurations."""

import os
import subprocess
import sys

import pytest

import flax
from flax import configurations
from flax.configurations import Config
from flax.configurations import Flag


def test_defaults_of_current_flax():
  config = Config()
  assert config.flags() == {
    'flax_filter_frames': True,
    'flax_profile': True,
    'flax_use_orbax_checkpointing': True,
    'flax_preserve_adopted_names': False,
    'flax_return_frozendict': False,
    'flax_fix_rng_separator': False,
    'flax_use_flaxlib': False,
    'flax_array_ref': False,
    'flax_pytree_module': True,
    'flax_max_repr_depth': None,
    'flax_always_shard_variable': True,
    'flax_hijax_variable': False,
    'nnx_graph_mode': True,
    'nnx_graph_updates': True,
    'flax_checkpoint_backend': '',
    'flax_partitioning_backend': '',
    'flax_plugins_strict': False,
  }


def test_repr():
  config = Config()
  assert repr(config).splitlines()[:4] == [
    'Config(',
    '  flax_filter_frames=True, ',
    '  flax_profile=True, ',
    '  flax_use_orbax_checkpointing=True, ',
  ]
  assert repr(config).endswith('  flax_plugins_strict=False\n)')


def test_update_and_read():
  config = Config()
  config.update('flax_return_frozendict', True)
  assert config.flax_return_frozendict is True
  config.update(configurations.flax_return_frozendict, False)
  assert config.flax_return_frozendict is False
  # Values are stored as given.
  config.update('flax_max_repr_depth', 3)
  assert config.flax_max_repr_depth == 3
  with pytest.raises(AttributeError, match='has no setter'):
    config.flax_profile = False


def test_graph_mode_alias():
  config = Config()
  config.update('flax_graph_mode', False)
  assert config.nnx_graph_mode is False and config.flax_graph_mode is False
  config.update('nnx_graph_mode', True)
  assert config.flax_graph_mode is True


def test_unknown_flag():
  config = Config()
  with pytest.raises(LookupError, match='Unrecognized config option: x'):
    config.update('x', True)
  with pytest.raises(AttributeError, match="has no attribute 'y'"):
    config.y
  assert not hasattr(config, 'flax_not_a_flag')
  assert getattr(config, 'flax_not_a_flag', 'default') == 'default'


def test_environment_variables(monkeypatch):
  monkeypatch.setenv('FLAX_RETURN_FROZENDICT', 'yes')
  monkeypatch.setenv('FLAX_MAX_REPR_DEPTH', '3')
  monkeypatch.setenv('NNX_GRAPH_MODE', 'false')
  monkeypatch.setenv('FLAX_FIX_RNG_SEPARATOR', '1')
  config = Config()
  assert config.flax_return_frozendict is True
  assert config.flax_max_repr_depth == 3
  assert config.nnx_graph_mode is False
  assert config.flax_fix_rng_separator is True
  monkeypatch.setenv('FLAX_PROFILE', 'maybe')
  with pytest.raises(ValueError) as info:
    Config()
  assert str(info.value) == (
    "invalid truth value 'maybe' for environment 'FLAX_PROFILE'"
  )


def test_temp_flip_flag():
  config = Config()
  with config.temp_flip_flag('return_frozendict', True):
    assert config.flax_return_frozendict is True
  assert config.flax_return_frozendict is False
  with pytest.raises(AttributeError, match='flax_flax_return_frozendict'):
    with config.temp_flip_flag('flax_return_frozendict', True):
      pass


def test_flag_holders():
  holder = configurations.flax_fix_rng
  assert holder.name == 'flax_fix_rng_separator'
  assert holder.value is False
  assert configurations.nnx_graph_mode.name == 'nnx_graph_mode'
  with pytest.raises(TypeError, match='did you mean to use'):
    bool(configurations.flax_profile)


def test_global_config_object():
  assert flax.config is configurations.config
  old = flax.config.flax_return_frozendict
  flax.config.update('flax_return_frozendict', not old)
  try:
    assert flax.config.flax_return_frozendict is (not old)
  finally:
    flax.config.update('flax_return_frozendict', old)


def test_define_twice_with_other_default_is_an_error():
  config = Config()
  config.define(Flag('flax_new', 1))
  config.define(Flag('flax_new', 1))
  with pytest.raises(ValueError, match='defined twice'):
    config.define(Flag('flax_new', 2))


@pytest.mark.parametrize(
  'raw,expected',
  [
    ('y', True),
    ('YES', True),
    ('t', True),
    ('true', True),
    ('On', True),
    ('1', True),
    ('n', False),
    ('No', False),
    ('f', False),
    ('FALSE', False),
    ('off', False),
    ('0', False),
  ],
)
def test_static_bool_env(monkeypatch, raw, expected):
  monkeypatch.setenv('FLAX_TEST_VAR', raw)
  assert configurations.static_bool_env('FLAX_TEST_VAR', not expected) is (
    expected
  )


def test_static_bool_env_default_and_error(monkeypatch):
  monkeypatch.delenv('FLAX_TEST_VAR', raising=False)
  assert configurations.static_bool_env('FLAX_TEST_VAR', True) is True
  monkeypatch.setenv('FLAX_TEST_VAR', 'maybe')
  with pytest.raises(ValueError) as info:
    configurations.static_bool_env('FLAX_TEST_VAR', True)
  assert str(info.value) == (
    "invalid truth value 'maybe' for environment 'FLAX_TEST_VAR'"
  )


def test_define_bool_state():
  holder = configurations.define_bool_state('my_test_flag', False, 'help')
  assert holder.value is False
  flax.config.update('flax_my_test_flag', True)
  assert holder.value is True
  flax.config.update('flax_my_test_flag', False)


def test_define_bool_state_reads_environment():
  code = (
    'from flax import configurations as c\n'
    'h = c.define_bool_state("env_flag", False, "")\n'
    'print(h.value)\n'
  )
  env = dict(os.environ, FLAX_ENV_FLAG='true')
  out = subprocess.run(
    [sys.executable, '-c', code],
    env=env,
    capture_output=True,
    text=True,
    check=True,
  )
  assert out.stdout.strip() == 'True'


def test_static_env_errors(monkeypatch):
  monkeypatch.setenv('FLAX_TEST_VAR', '')
  with pytest.raises(ValueError, match="invalid truth value ''"):
    configurations.static_bool_env('FLAX_TEST_VAR', True)
  with pytest.raises(ValueError) as info:
    configurations.static_int_env('FLAX_TEST_VAR', 3)
  assert str(info.value) == (
    "invalid integer value '' for environment 'FLAX_TEST_VAR'"
  )
  monkeypatch.setenv('FLAX_TEST_VAR', '12')
  assert configurations.static_int_env('FLAX_TEST_VAR', None) == 12
  monkeypatch.delenv('FLAX_TEST_VAR')
  assert configurations.static_int_env('FLAX_TEST_VAR', None) is None
  assert configurations.static_int_env('FLAX_TEST_VAR', 5) == 5


def test_bool_and_int_flags(monkeypatch):
  monkeypatch.setenv('TEST_CFG_FLAG_ENV', 'true')
  holder = configurations.bool_flag('test_cfg_flag', default=False, help='help')
  assert holder.name == 'test_cfg_flag' and holder.value is False
  assert flax.config.test_cfg_flag is False
  from_env = configurations.bool_flag(
    'test_cfg_flag_env', default=False, help=''
  )
  assert from_env.value is True
  ints = configurations.int_flag('test_cfg_int', default=None, help='')
  assert ints.value is None
  flax.config.update('test_cfg_int', 4)
  assert ints.value == 4 and flax.config.test_cfg_int == 4
  with pytest.raises(RuntimeError, match='test_cfg_flag already defined'):
    configurations.bool_flag('test_cfg_flag', default=False, help='')
  with pytest.raises(ValueError, match="invalid truth value '3'"):
    configurations.bool_flag('test_cfg_flag2', default=3, help='')
