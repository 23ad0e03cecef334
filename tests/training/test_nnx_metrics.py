"""nnx.metrics: results, masks and errors of Flax 0.12.8."""

import numpy as np
import pytest

import jax.numpy as jnp
from flax import nnx


def test_average_values_and_mask():
  a = nnx.metrics.Average()
  a.update(values=jnp.array([1.0, 2.0, 3.0]))
  a.update(values=4)
  assert float(a.compute()) == 2.5
  assert (float(a.total[...]), int(a.count[...])) == (10.0, 4)
  a.reset()
  assert np.isnan(float(a.compute()))
  a.update(values=jnp.array([1.0, 2.0, 3.0, 4.0]), mask=jnp.array([1, 0, 1, 0]))
  assert (float(a.compute()), int(a.count[...])) == (2.0, 2)
  a.reset()
  # The mask broadcasts against the values.
  a.update(values=jnp.array([1.0, 2.0]), mask=jnp.array([True]))
  assert (float(a.total[...]), int(a.count[...])) == (3.0, 1)
  with pytest.raises(ValueError, match='values should be a jax array'):
    a.update(values=3.0, mask=jnp.array(False))
  with pytest.raises(TypeError, match="Expected keyword argument 'values'"):
    a.update(foo=1)


def test_accuracy_results_and_errors():
  acc = nnx.metrics.Accuracy()
  logits = jnp.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
  acc.update(logits=logits, labels=jnp.array([1, 1, 1]))
  np.testing.assert_allclose(acc.compute(), 0.6666667)
  acc.reset()
  acc.update(
    logits=logits[:2], labels=jnp.array([1, 1]), mask=jnp.array([True, False])
  )
  assert float(acc.compute()) == 1.0
  with pytest.raises(ValueError, match=r'logits.ndim==labels.ndim\+1'):
    acc.update(logits=jnp.ones((2, 2)), labels=jnp.ones((2, 2), jnp.int32))
  with pytest.raises(ValueError, match='Expected labels.dtype==jnp.int32'):
    acc.update(logits=jnp.ones((2, 2)), labels=jnp.ones((2,)))
  with pytest.raises(TypeError, match='Expected threshold to be a float'):
    nnx.metrics.Accuracy(threshold=1)
  binary = nnx.metrics.Accuracy(threshold=0.5)
  binary.update(logits=jnp.array([0.1, 0.9, 0.7]), labels=jnp.array([0, 1, 0]))
  np.testing.assert_allclose(binary.compute(), 0.6666667)
  with pytest.raises(ValueError, match='logits.ndim==labels.ndim'):
    binary.update(logits=jnp.ones((2, 2)), labels=jnp.ones((2,)))


def test_welford_statistics():
  w = nnx.metrics.Welford()
  w.update(values=jnp.array([1.0, 2.0, 3.0, 4.0]))
  w.update(values=jnp.array([10.0]))
  stats = w.compute()
  assert isinstance(stats, nnx.metrics.Statistics)
  np.testing.assert_allclose(stats.mean, 4.0)
  np.testing.assert_allclose(stats.standard_error_of_mean, 1.4142135)
  np.testing.assert_allclose(stats.standard_deviation, 3.1622777)


def test_multimetric_and_state():
  metrics = nnx.MultiMetric(
    accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average('loss')
  )
  metrics.update(
    logits=jnp.array([[0.1, 0.9]]), labels=jnp.array([1]), loss=jnp.array(3.0)
  )
  assert {k: float(v) for k, v in metrics.compute().items()} == {
    'accuracy': 1.0,
    'loss': 3.0,
  }
  metrics.reset()
  assert all(np.isnan(float(v)) for v in metrics.compute().values())
  state = nnx.state(metrics)
  assert sorted(state) == ['accuracy', 'loss']
  assert type(state['loss']['total']) is nnx.metrics.MetricState
  masked = nnx.MultiMetric(loss=nnx.metrics.Average('loss'))
  masked.update(loss=jnp.array([1.0, 5.0]), mask=jnp.array([True, False]))
  assert float(masked.compute()['loss']) == 1.0


def test_metric_base_class_is_abstract():
  with pytest.raises(NotImplementedError, match='__init__'):
    nnx.metrics.Metric()

  class Partial(nnx.metrics.Metric):
    def __init__(self):
      pass

  for name in ('reset', 'compute'):
    with pytest.raises(NotImplementedError, match=name):
      getattr(Partial(), name)()
  with pytest.raises(NotImplementedError, match='update'):
    Partial().update(x=1)
  graphdef, state = Partial().split()
  assert isinstance(graphdef, nnx.GraphDef) and len(state) == 0
