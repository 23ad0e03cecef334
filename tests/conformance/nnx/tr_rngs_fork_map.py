"""Rngs.fork(split={...}) splits the matched streams and forks (counts)
the others, the default stream included."""

import jax
import report
from flax import nnx

r = nnx.Rngs(0, params=1)
f3 = r.fork(split={'params': 2, ...: None})
report.value(
  'counts', [r.default.count[...].tolist(), r.params.count[...].tolist()]
)
report.value('shapes', [list(f3.params.key.shape), list(f3.default.key.shape)])
report.array('next-default', jax.random.key_data(r.default()))

r = nnx.Rngs(0, params=1, dropout=2)
f = r.fork(split={'params': 2})
report.value(
  'unmatched-counts',
  [r[k].count[...].tolist() for k in ('default', 'dropout', 'params')],
)
report.array('unmatched-dropout', jax.random.key_data(f.dropout.key[...]))
