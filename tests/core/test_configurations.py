"""flax.configurations: defining flags again in isolated tests."""

from unittest import mock

import pytest

from flax import configurations


def test_flags_can_be_defined_again_with_fresh_values():
  # Tests isolate flags by swapping ``config._values``; a flag can then be
  # defined again, and is unknown once the original dict is back.
  cfg = configurations.config
  for _ in range(2):
    with mock.patch.object(cfg, '_values', {}):
      holder = configurations.bool_flag(
        'flax_redefined_test', default=False, help='A test flag.'
      )
      assert holder.value is False and cfg._values == {
        'flax_redefined_test': False
      }
      cfg.update('flax_redefined_test', True)
      assert holder.value is True
  with pytest.raises(LookupError, match='Unrecognized config option'):
    cfg.flax_redefined_test
  with mock.patch.object(cfg, '_values', {}):
    holder = configurations.int_flag(
      'flax_redefined_test', default=3, help='A test flag.'
    )
    assert holder.value == 3
    with pytest.raises(RuntimeError, match='already defined'):
      configurations.int_flag('flax_redefined_test', default=4, help='again')
