"""nnx.metrics results: Average (with masks), Accuracy, Welford,
MultiMetric, reset, reprs and state."""

import jax.numpy as jnp
import report
from flax import nnx

a = nnx.metrics.Average()
a.update(values=jnp.array([1.0, 2.0, 3.0]))
a.update(values=4)
report.array('average', a.compute())
report.text('average repr', repr(a))
a.reset()
report.array('average after reset', a.compute())
a.update(values=jnp.array([1.0, 2.0, 3.0, 4.0]), mask=jnp.array([1, 0, 1, 0]))
report.array('masked average', a.compute())
report.array('masked count', a.count[...])
acc = nnx.metrics.Accuracy()
logits = jnp.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
acc.update(logits=logits, labels=jnp.array([1, 1, 1]))
report.array('accuracy', acc.compute())
binary = nnx.metrics.Accuracy(threshold=0.5)
binary.update(logits=jnp.array([0.1, 0.9, 0.7]), labels=jnp.array([0, 1, 0]))
report.array('binary accuracy', binary.compute())
w = nnx.metrics.Welford()
w.update(values=jnp.array([1.0, 2.0, 3.0, 4.0]))
w.update(values=jnp.array([10.0]))
stats = w.compute()
report.array('welford mean', stats.mean)
report.array('welford sem', stats.standard_error_of_mean)
report.array('welford std', stats.standard_deviation)
metrics = nnx.MultiMetric(
  accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average('loss')
)
metrics.update(
  logits=jnp.array([[0.1, 0.9]]), labels=jnp.array([1]), loss=jnp.array(3.0)
)
report.tree('multi', metrics.compute())
report.text('multi repr', repr(metrics))
report.tree('multi state', nnx.state(metrics))
