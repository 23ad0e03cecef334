"""nnx.MultiMetric.update(mask=...): a dict gives each named metric its own
mask, an array goes to every metric whose update takes a mask."""

import jax.numpy as jnp
import report
from flax import nnx

logits = jnp.array([[1.0, 0, 0], [0, 1.0, 0], [1.0, 0, 0]])
labels = jnp.array([0, 1, 1])
loss = jnp.array([1.0, 2.0, 6.0])
keep = jnp.array([True, False, True])


def run(label, **kwargs):
  metrics = nnx.MultiMetric(
    acc=nnx.metrics.Accuracy(),
    loss=nnx.metrics.Average('loss'),
    w=nnx.metrics.Welford('loss'),
  )
  metrics.update(logits=logits, labels=labels, loss=loss, **kwargs)
  out = metrics.compute()
  report.array(f'{label} acc', out['acc'])
  report.array(f'{label} loss', out['loss'])
  report.array(f'{label} welford mean', out['w'].mean)


run('no mask')
run('mask None', mask=None)
run('mask array', mask=keep)
run('mask dict acc', mask={'acc': keep})
run('mask dict loss', mask={'loss': keep})
run('mask dict welford', mask={'w': keep})
run('mask dict unknown name', mask={'other': keep})
run('mask dict two', mask={'acc': keep, 'loss': ~keep})
