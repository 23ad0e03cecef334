"""NNX Dropout: masks from the dropout stream, deterministic switch."""

import jax.numpy as jnp
import report
from flax import nnx

drop = nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=1))
x = jnp.ones((3, 6))
report.array('first', drop(x), exact=True)
report.array('second', drop(x), exact=True)
drop.eval()
report.array('eval', drop(x), exact=True)
plain = nnx.Dropout(0.25)
report.array('call-rngs', plain(x, rngs=nnx.Rngs(dropout=7)), exact=True)
