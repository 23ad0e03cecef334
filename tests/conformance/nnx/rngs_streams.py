"""nnx.Rngs: stream keys, counts, fork, split and defaults."""

import jax
import report
from flax import nnx

rngs = nnx.Rngs(0, dropout=1)
report.array('default-1', jax.random.key_data(rngs()), exact=True)
report.array('default-2', jax.random.key_data(rngs.default()), exact=True)
report.array('params', jax.random.key_data(rngs.params()), exact=True)
report.array('dropout', jax.random.key_data(rngs.dropout()), exact=True)
report.array('dropout-2', jax.random.key_data(rngs['dropout']()), exact=True)
report.array('normal', rngs.normal((3,)))
report.array('uniform', rngs.dropout.uniform((2,)))
report.tree('state', nnx.state(rngs))
forked = rngs.fork()
report.tree('forked', nnx.state(forked))
with report.raises('bad seed'):
  nnx.Rngs(0).params.unknown_method()
