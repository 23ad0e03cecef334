"""``nnx.metrics``: metrics that accumulate in Variables.

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> metrics = nnx.MultiMetric(
...     accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average('loss'))
>>> logits = jnp.array([[0.1, 0.9], [0.8, 0.2]])
>>> metrics.update(logits=logits, labels=jnp.array([1, 1]), loss=jnp.array(2.0))
>>> {k: float(v) for k, v in metrics.compute().items()}
{'accuracy': 0.5, 'loss': 2.0}
"""

import inspect
import typing as tp

import jax
import jax.numpy as jnp
import numpy as np

from flax import nnx
from flax import struct
from flax.nnx import Pytree as Pytree
from flax.nnx import Variable as Variable

__all__ = [
  'Accuracy',
  'Average',
  'Metric',
  'MetricState',
  'MultiMetric',
  'Statistics',
  'Welford',
]


class MetricState(nnx.Variable):
  """A Variable holding the accumulated state of a metric."""


def _value(v):
  return v.get_value() if hasattr(v, 'get_value') else v.value


def _set(v, value):
  if hasattr(v, 'set_value'):
    v.set_value(value)
  else:
    v.value = value


class Metric(nnx.Pytree):
  """Base class of metrics: ``reset``, ``update(**kwargs)``, ``compute``.

  Subclasses define all four of ``__init__``, ``reset``, ``update`` and
  ``compute``; the base versions raise ``NotImplementedError``.
  """

  def __init__(self):
    raise NotImplementedError(
      f'{type(self).__name__}: Must override `__init__()` method.'
    )

  def reset(self) -> None:
    """Forgets everything accumulated."""
    raise NotImplementedError(
      f'{type(self).__name__}: Must override `reset()` method.'
    )

  def update(self, **kwargs) -> None:
    """Accumulates a batch of values."""
    raise NotImplementedError(
      f'{type(self).__name__}: Must override `update()` method.'
    )

  def compute(self) -> tp.Any:
    """Returns the metric of everything accumulated."""
    raise NotImplementedError(
      f'{type(self).__name__}: Must override `compute()` method.'
    )

  def split(self, *filters):
    """``nnx.split(self, *filters)``."""
    return nnx.split(self, *filters)


class Average(Metric):
  """The mean of the values passed as keyword ``argname``.

  Args:
    argname: the keyword argument of ``update`` that holds the values.
  """

  def __init__(self, argname: str = 'values'):
    self.argname = argname
    self.total = MetricState(jnp.array(0, dtype=jnp.float32))
    self.count = MetricState(jnp.array(0, dtype=jnp.int32))

  def reset(self) -> None:
    _set(self.total, jnp.array(0, dtype=jnp.float32))
    _set(self.count, jnp.array(0, dtype=jnp.int32))

  def update(self, mask: jax.Array | None = None, **kwargs) -> None:
    """Adds the values of keyword ``argname`` (those where ``mask`` is
    true, if given; ``mask`` broadcasts against the values)."""
    if self.argname not in kwargs:
      raise TypeError(f"Expected keyword argument '{self.argname}'")
    values = kwargs[self.argname]
    if mask is not None:
      if not isinstance(values, jax.Array):
        raise ValueError('If mask is provided, values should be a jax array')
      _set(self.total, _value(self.total) + (values * mask).sum())
      _set(self.count, _value(self.count) + mask.astype(jnp.int32).sum())
    elif isinstance(values, (int, float)):
      _set(self.total, _value(self.total) + values)
      _set(self.count, _value(self.count) + 1)
    else:
      values = jnp.asarray(values)
      _set(self.total, _value(self.total) + values.sum())
      _set(self.count, _value(self.count) + values.size)

  def compute(self) -> jax.Array:
    return _value(self.total) / _value(self.count)


@struct.dataclass
class Statistics:
  """What ``Welford.compute`` returns."""

  mean: jax.Array
  standard_error_of_mean: jax.Array
  standard_deviation: jax.Array


class Welford(Metric):
  """Running mean and standard deviation (Welford's algorithm).

  Args:
    argname: the keyword argument of ``update`` that holds the values.
  """

  def __init__(self, argname: str = 'values'):
    self.argname = argname
    self.count = MetricState(jnp.array(0, dtype=jnp.int32))
    self.mean = MetricState(jnp.array(0, dtype=jnp.float32))
    self.m2 = MetricState(jnp.array(0, dtype=jnp.float32))

  def reset(self) -> None:
    _set(self.count, jnp.array(0, dtype=jnp.int32))
    _set(self.mean, jnp.array(0, dtype=jnp.float32))
    _set(self.m2, jnp.array(0, dtype=jnp.float32))

  def update(self, **kwargs) -> None:
    if self.argname not in kwargs:
      raise TypeError(f"Expected keyword argument '{self.argname}'")
    values = jnp.asarray(kwargs[self.argname])
    count = values.size
    original_count = _value(self.count)
    new_count = original_count + count
    delta = values.mean() - _value(self.mean)
    new_mean = _value(self.mean) + delta * count / new_count
    m2 = 0.0 if count == 1 else values.var() * count
    new_m2 = (
      _value(self.m2) + m2 + delta * delta * count * original_count / new_count
    )
    _set(self.count, new_count)
    _set(self.mean, new_mean)
    _set(self.m2, new_m2)

  def compute(self) -> Statistics:
    count = _value(self.count)
    variance = _value(self.m2) / count
    standard_deviation = variance**0.5
    sem = standard_deviation / (count**0.5)
    return Statistics(
      mean=_value(self.mean),
      standard_error_of_mean=sem,
      standard_deviation=standard_deviation,
    )


class Accuracy(Average):
  """The fraction of correct predictions.

  ``update(logits=..., labels=...)``: with no ``threshold``, the prediction
  is ``argmax(logits, -1)`` and labels are integers; with a float
  ``threshold``, it is ``logits > threshold`` (binary).

  Args:
    threshold: the decision threshold for binary classification.
    *args: passed to ``Average``.
    **kwargs: passed to ``Average``.
  """

  def __init__(self, threshold: float | None = None, *args, **kwargs):
    if threshold is not None and not isinstance(threshold, float):
      raise TypeError(
        f'Expected threshold to be a float, got {type(threshold)}'
      )
    self.threshold = threshold
    super().__init__(*args, **kwargs)

  def update(  # type: ignore[override]
    self,
    *,
    logits: jax.Array,
    labels: jax.Array,
    mask: jax.Array | None = None,
    **_,
  ) -> None:
    logits, labels = jnp.asarray(logits), jnp.asarray(labels)
    if self.threshold is not None:
      if logits.ndim != labels.ndim:
        raise ValueError(
          'For binary classification, expected logits.ndim==labels.ndim, '
          f'got {logits.ndim} and {labels.ndim}'
        )
      correct = (logits > self.threshold) == labels.astype(bool)
    else:
      if logits.ndim != labels.ndim + 1:
        raise ValueError(
          'For multi-class classification, expected '
          f'logits.ndim==labels.ndim+1, got {logits.ndim} and {labels.ndim}'
        )
      if labels.dtype in (np.int64, np.int32, np.int16, np.int8, np.uint8):
        labels = labels.astype(jnp.int32)
      else:
        raise ValueError(
          f'Expected labels.dtype==jnp.int32, got {labels.dtype}'
        )
      correct = logits.argmax(axis=-1) == labels
    super().update(values=correct, mask=mask)


class MultiMetric(Metric):
  """Several metrics updated together: ``MultiMetric(name=metric, ...)``.

  ``update(**kwargs)`` passes every keyword to every metric; ``compute()``
  returns ``{name: value}``. ``mask`` goes only to metrics whose ``update``
  has a ``mask`` parameter; a dict ``{name: mask}`` gives each metric its
  own (metrics it does not name get none).
  """

  def __init__(self, **metrics):
    self._metric_names = tuple(metrics)
    for name, metric in metrics.items():
      setattr(self, name, metric)

  def reset(self) -> None:
    for name in self._metric_names:
      getattr(self, name).reset()

  def update(self, **updates) -> None:
    mask = updates.pop('mask', None)
    for name in self._metric_names:
      metric = getattr(self, name)
      m = mask.get(name) if isinstance(mask, dict) else mask
      if m is not None and _takes_mask(type(metric)):
        metric.update(mask=m, **updates)
      else:
        metric.update(**updates)

  def compute(self) -> dict:
    return {name: getattr(self, name).compute() for name in self._metric_names}


_TAKES_MASK: dict = {}


def _takes_mask(cls) -> bool:
  """Whether ``cls.update`` has a ``mask`` parameter (cached per class)."""
  takes = _TAKES_MASK.get(cls)
  if takes is None:
    try:
      params = inspect.signature(cls.update).parameters
    except (TypeError, ValueError):
      params = {}
    takes = _TAKES_MASK[cls] = 'mask' in params
  return takes
