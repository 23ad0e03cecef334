"""Tests of flax.traceback_util: Flax frames are hidden from tracebacks."""

import doctest
import os
import traceback

import jax
import pytest
from jax._src import traceback_util as jax_traceback_util

import flax
from flax import traceback_util
from flax.core import frozen_dict


def test_doctests():
  assert doctest.testmod(traceback_util).failed == 0


@traceback_util.api_boundary
def public_api(fd):
  # frozen_dict lives inside the flax package: its frames are internal.
  return fd.pop('missing')


@traceback_util.api_boundary
def outer_api(fd):
  return public_api(fd)


def user_code(fn=public_api):
  return fn(frozen_dict.FrozenDict({'a': 1}))


def _files(error):
  return [
    os.path.basename(frame.filename)
    for frame in traceback.extract_tb(error.__traceback__)
  ]


def _in_flax(error):
  roots = [os.path.abspath(p) for p in flax.__path__]
  return [
    frame.filename
    for frame in traceback.extract_tb(error.__traceback__)
    if any(frame.filename.startswith(root + os.sep) for root in roots)
  ]


@pytest.fixture(autouse=True)
def restore_flag():
  yield
  traceback_util.hide_flax_in_tracebacks()


def test_flax_frames_are_hidden_by_default():
  assert flax.config.flax_filter_frames is True
  with pytest.raises(KeyError) as info:
    user_code()
  assert _in_flax(info.value) == []
  names = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
  assert names[-2:] == ['user_code', 'public_api']


def test_nested_boundaries_filter_once():
  with pytest.raises(KeyError) as info:
    user_code(outer_api)
  assert _in_flax(info.value) == []
  names = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
  assert names[-3:] == ['user_code', 'outer_api', 'public_api']


def test_show_flax_in_tracebacks():
  traceback_util.show_flax_in_tracebacks()
  assert flax.config.flax_filter_frames is False
  with pytest.raises(KeyError) as info:
    user_code()
  assert 'frozen_dict.py' in _files(info.value)
  # The boundary itself is JAX's wrapper (always hidden by JAX).
  assert traceback_util.api_boundary is jax_traceback_util.api_boundary


def test_config_flag_alone_does_not_change_filtering():
  # As in Flax 0.12.8, show/hide_flax_in_tracebacks (or the environment
  # variable at import) decide; updating the flag alone changes the flag.
  flax.config.update('flax_filter_frames', False)
  with pytest.raises(KeyError) as info:
    user_code()
  assert 'frozen_dict.py' not in _files(info.value)
  traceback_util.show_flax_in_tracebacks()
  flax.config.update('flax_filter_frames', True)
  with pytest.raises(KeyError) as info:
    user_code()
  assert 'frozen_dict.py' in _files(info.value)


def _hidden_and_kept(error):
  hidden = kept = 0
  for frame, _ in traceback.walk_tb(error.__traceback__):
    if '__tracebackhide__' in frame.f_locals:
      hidden += 1
    else:
      kept += 1
  return hidden, kept


@pytest.fixture
def jax_filtering():
  old = jax.config.jax_traceback_filtering
  yield lambda mode: jax.config.update('jax_traceback_filtering', mode)
  jax.config.update('jax_traceback_filtering', old)


def test_boundaries_follow_jax_filtering_mode(jax_filtering):
  # 'off': the traceback is left whole.
  jax_filtering('off')
  with pytest.raises(KeyError) as info:
    user_code(outer_api)
  assert 'frozen_dict.py' in _files(info.value)
  total = len(_files(info.value))
  # 'tracebackhide': the same frames, the Flax/JAX ones marked hidden.
  jax_filtering('tracebackhide')
  with pytest.raises(KeyError) as info:
    user_code(outer_api)
  hidden, kept = _hidden_and_kept(info.value)
  assert hidden + kept == total and hidden > 0
  assert 'frozen_dict.py' in _files(info.value)
  # 'remove_frames': the hidden frames go; the whole stack is the cause.
  jax_filtering('remove_frames')
  with pytest.raises(KeyError) as info:
    user_code(outer_api)
  assert len(_files(info.value)) == kept
  assert 'frozen_dict.py' not in _files(info.value)
  assert type(info.value.__cause__).__name__ == 'UnfilteredStackTrace'
  jax_filtering('quiet_remove_frames')
  with pytest.raises(KeyError) as info:
    user_code(outer_api)
  assert len(_files(info.value)) == kept and info.value.__cause__ is None
  # Shown Flax frames are kept by every mode.
  traceback_util.show_flax_in_tracebacks()
  with pytest.raises(KeyError) as info:
    user_code(outer_api)
  assert 'frozen_dict.py' in _files(info.value)


def test_jax_boundaries_hide_flax_frames_too():
  def f(x):
    return user_code()

  with pytest.raises(KeyError) as info:
    jax.jit(f)(1.0)
  assert _in_flax(info.value) == []


def test_successful_calls_are_untouched():
  @traceback_util.api_boundary
  def add(x, y=1):
    """Adds."""
    return x + y

  assert add(1, y=2) == 3
  assert add.__name__ == 'add' and add.__doc__ == 'Adds.'


def test_register_exclusion(tmp_path):
  module_file = tmp_path / 'plugin_mod.py'
  module_file.write_text('def boom():\n  raise RuntimeError("x")\n')
  namespace = {}
  exec(compile(module_file.read_text(), str(module_file), 'exec'), namespace)

  @traceback_util.api_boundary
  def api():
    namespace['boom']()

  with pytest.raises(RuntimeError) as info:
    api()
  assert 'plugin_mod.py' in _files(info.value)
  traceback_util.register_exclusion(str(tmp_path))
  try:
    with pytest.raises(RuntimeError) as info:
      api()
    assert 'plugin_mod.py' not in _files(info.value)
  finally:
    traceback_util._extra_exclusions.remove(os.path.abspath(tmp_path))
    traceback_util._registered_for[0] = None


def test_flax_exclusions_are_what_is_registered_with_jax():
  from jax._src import traceback_util as jax_tb

  from flax import traceback_util

  traceback_util.show_flax_in_tracebacks()
  without = len(jax_tb._exclude_paths)
  traceback_util.hide_flax_in_tracebacks()
  with_flax = len(jax_tb._exclude_paths)
  assert isinstance(traceback_util._flax_exclusions, set)
  assert traceback_util._flax_exclusions
  assert len(traceback_util._flax_exclusions) == with_flax - without
