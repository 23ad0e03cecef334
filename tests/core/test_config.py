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
  assert config.flax_return_frozendict is False
  assert config.flax_filter_frames is True
  assert config.flax_use_orbax_checkpointing is True
  assert config.flax_profile is True
  assert config.flax_fix_rng_separator is False


def test_update_and_read():
  config = Config()
  config.update('flax_return_frozendict', True)
  assert config.flax_return_frozendict is True
  config.update('flax_return_frozendict', 'false')
  assert config.flax_return_frozendict is False
  with pytest.raises(TypeError, match='takes a bool'):
    config.update('flax_return_frozendict', 1)
  with pytest.raises(AttributeError, match='flax.config.update'):
    config.flax_profile = False


def test_unknown_flag():
  config = Config()
  with pytest.raises(LookupError, match="Unrecognized config option: 'x'"):
    config.update('x', True)
  with pytest.raises(AttributeError, match="Unrecognized config option: 'y'"):
    config.y
  assert not hasattr(config, 'flax_not_a_flag')
  assert getattr(config, 'flax_not_a_flag', 'default') == 'default'


def test_environment_variables(monkeypatch):
  monkeypatch.setenv('FLAX_RETURN_FROZENDICT', 'yes')
  monkeypatch.setenv('FLAX_MAX_REPR_DEPTH', '3')
  config = Config()
  assert config.flax_return_frozendict is True
  assert config.flax_max_repr_depth == 3
  monkeypatch.setenv('FLAX_PROFILE', 'maybe')
  with pytest.raises(ValueError, match='is not a boolean'):
    Config()


def test_temp_flip_flag():
  config = Config()
  with config.temp_flip_flag('return_frozendict', True):
    assert config.flax_return_frozendict is True
  assert config.flax_return_frozendict is False


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
  assert holder.value is False and not holder
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
