"""nnx.metrics errors: missing argument, shapes, dtypes, threshold, mask
without an array, the abstract base class."""

import jax.numpy as jnp
import report
from flax import nnx

a = nnx.metrics.Average()
with report.raises('missing values'):
  a.update(foo=1)
with report.raises('mask with a Python scalar'):
  a.update(values=3.0, mask=jnp.array(False))
acc = nnx.metrics.Accuracy()
with report.raises('logits rank'):
  acc.update(logits=jnp.ones((2, 2)), labels=jnp.ones((2, 2), jnp.int32))
with report.raises('float labels'):
  acc.update(logits=jnp.ones((2, 2)), labels=jnp.ones((2,)))
with report.raises('int threshold'):
  nnx.metrics.Accuracy(threshold=1)
binary = nnx.metrics.Accuracy(threshold=0.5)
with report.raises('binary rank'):
  binary.update(logits=jnp.ones((2, 2)), labels=jnp.ones((2,)))
with report.raises('abstract metric'):
  nnx.metrics.Metric()


class Partial(nnx.metrics.Metric):
  def __init__(self):
    pass


with report.raises('reset not defined'):
  Partial().reset()
with report.raises('compute not defined'):
  Partial().compute()
