"""Errors raised in user code under init/apply point at the user's code."""

import traceback

import jax
import pytest

from flax import linen as nn
from flax import traceback_util


class Bad(nn.Module):
  @nn.compact
  def __call__(self, x):
    raise ValueError('boom')


class Outer(nn.Module):
  @nn.compact
  def __call__(self, x):
    return Bad()(x)


def frames(fn):
  with pytest.raises(ValueError, match='boom') as info:
    fn()
  return [
    (f.name, f.filename == __file__)
    for f in traceback.extract_tb(info.value.__traceback__)
  ]


USER_ONLY = [
  ('frames', True),
  ('<lambda>', True),
  ('__call__', True),
  ('__call__', True),
]


@pytest.mark.parametrize(
  'run',
  [
    lambda: Outer().init(jax.random.key(0), 1.0),
    lambda: Outer().init_with_output(jax.random.key(0), 1.0),
    lambda: Outer().apply({}, 1.0),
    lambda: nn.jit(Outer)().init(jax.random.key(0), 1.0),
  ],
)
def test_flax_frames_are_hidden_under_init_and_apply(run):
  assert frames(run)[1:] == USER_ONLY[1:]


def test_bound_module_calls_keep_the_module_frames():
  got = frames(lambda: Outer().bind({})(1.0))
  assert [name for name, _ in got] == [
    'frames', '<lambda>', 'wrapped_module_method', '_call_wrapped_method',
    '__call__', 'wrapped_module_method', '_call_wrapped_method', '__call__',
  ]  # fmt: skip


def test_show_flax_in_tracebacks_keeps_them():
  traceback_util.show_flax_in_tracebacks()
  try:
    got = frames(lambda: Outer().apply({}, 1.0))
  finally:
    traceback_util.hide_flax_in_tracebacks()
  assert len(got) > len(USER_ONLY)
