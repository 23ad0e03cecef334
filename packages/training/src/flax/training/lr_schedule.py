"""Legacy learning-rate schedules (use Optax schedules in new code).

Each function returns ``learning_rate_fn(step)``. A warm-up of
``warmup_length`` epochs scales the rate linearly from 0.

>>> from flax.training import lr_schedule
>>> fn = lr_schedule.create_stepped_learning_rate_schedule(
...     0.1, 10, [[2, 0.5], [4, 0.1]])
>>> [round(float(fn(s)), 4) for s in (0, 20, 21, 41)]
[0.1, 0.1, 0.05, 0.01]
"""

import logging

import jax.numpy as jnp
import numpy as np

__all__ = [
  'create_constant_learning_rate_schedule',
  'create_cosine_learning_rate_schedule',
  'create_stepped_learning_rate_schedule',
]

_DEPRECATION = (
  'Learning rate schedules in flax.training are effectively deprecated in '
  'favor of Optax schedules (optax.schedules).'
)


def _warmup(lr, step, warmup_length, steps_per_epoch):
  if warmup_length > 0.0:
    lr = lr * jnp.minimum(1.0, step / warmup_length / steps_per_epoch)
  return lr


def create_constant_learning_rate_schedule(
  base_learning_rate, steps_per_epoch, warmup_length=0.0
):
  """A constant learning rate, with an optional linear warm-up.

  Args:
    base_learning_rate: the rate.
    steps_per_epoch: steps in one epoch.
    warmup_length: warm-up length in epochs.
  """
  logging.getLogger(__name__).warning(_DEPRECATION)

  def learning_rate_fn(step):
    return _warmup(base_learning_rate, step, warmup_length, steps_per_epoch)

  return learning_rate_fn


def create_stepped_learning_rate_schedule(
  base_learning_rate, steps_per_epoch, lr_sched_steps, warmup_length=0.0
):
  """A piecewise-constant learning rate.

  Args:
    base_learning_rate: the rate before the first boundary.
    steps_per_epoch: steps in one epoch.
    lr_sched_steps: ``[[epoch, factor], ...]``: from ``epoch`` on, the rate
      is ``base_learning_rate * factor``.
    warmup_length: warm-up length in epochs.
  """
  logging.getLogger(__name__).warning(_DEPRECATION)
  boundaries = np.array([s[0] for s in lr_sched_steps]) * steps_per_epoch
  boundaries = np.round(boundaries).astype(int)
  values = np.array([1.0] + [s[1] for s in lr_sched_steps]) * base_learning_rate

  def learning_rate_fn(step):
    lr = jnp.take(values, jnp.sum(boundaries < step))
    return _warmup(lr, step, warmup_length, steps_per_epoch)

  return learning_rate_fn


def create_cosine_learning_rate_schedule(
  base_learning_rate, steps_per_epoch, halfcos_epochs, warmup_length=0.0
):
  """Half a cosine wave from ``base_learning_rate`` down to 0.

  Args:
    base_learning_rate: the starting rate.
    steps_per_epoch: steps in one epoch.
    halfcos_epochs: epochs until the rate reaches 0.
    warmup_length: warm-up length in epochs.
  """
  logging.getLogger(__name__).warning(_DEPRECATION)
  halfwavelength_steps = halfcos_epochs * steps_per_epoch

  def learning_rate_fn(step):
    scale = jnp.cos(step * jnp.pi / halfwavelength_steps) * 0.5 + 0.5
    lr = base_learning_rate * scale
    return _warmup(lr, step, warmup_length, steps_per_epoch)

  return learning_rate_fn
