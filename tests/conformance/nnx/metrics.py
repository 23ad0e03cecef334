"""nnx.metrics: Average, Accuracy, MultiMetric."""

import jax.numpy as jnp
import report
from flax import nnx

metrics = nnx.MultiMetric(
  accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average('loss')
)
logits = jnp.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
labels = jnp.array([1, 0, 0])
metrics.update(logits=logits, labels=labels, loss=jnp.array(0.5))
metrics.update(logits=logits, labels=jnp.array([1, 1, 1]), loss=jnp.array(1.5))
report.tree('compute', metrics.compute())
metrics.reset()
avg = nnx.metrics.Average()
avg.update(values=jnp.array([1.0, 2.0, 3.0]))
report.array('average', avg.compute())
