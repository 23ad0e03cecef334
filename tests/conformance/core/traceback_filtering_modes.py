"""Flax API boundaries follow JAX's jax_traceback_filtering mode."""

import traceback

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import traceback_util


class Boom(nn.Module):
  @nn.compact
  def __call__(self, x):
    raise ValueError('error here.')


def frames(error):
  """(frames kept visible, user frames among them, flax frames among them)"""
  visible = user = flax_frames = 0
  for frame, _ in traceback.walk_tb(error.__traceback__):
    if '__tracebackhide__' in frame.f_locals:
      continue
    visible += 1
    name = frame.f_code.co_filename
    user += name == __file__
    flax_frames += '/flax/' in name
  return visible == user, user, flax_frames > 0


calls = {
  'init': lambda: Boom().init(jax.random.key(0), jnp.ones(2)),
  'apply': lambda: Boom().apply({}, jnp.ones(2)),
  'jax.jit': lambda: jax.jit(lambda x: Boom().apply({}, x))(jnp.ones(2)),
}
for shown in (False, True):
  if shown:
    traceback_util.show_flax_in_tracebacks()
  else:
    traceback_util.hide_flax_in_tracebacks()
  for mode in ('off', 'tracebackhide', 'remove_frames', 'quiet_remove_frames'):
    jax.config.update('jax_traceback_filtering', mode)
    for name, call in calls.items():
      try:
        call()
      except ValueError as e:
        only_user, user, flax_frames = frames(e)
        if mode != 'off':
          report.value(f'{shown} {mode} {name} only user', only_user)
        report.value(f'{shown} {mode} {name} user', user)
        report.value(f'{shown} {mode} {name} flax', flax_frames)
        report.value(f'{shown} {mode} {name} cause', type(e.__cause__).__name__)
traceback_util.hide_flax_in_tracebacks()
