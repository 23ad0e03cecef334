"""nnx.vmap with tuple and dict out_axes and no graph nodes in the output."""

import jax.numpy as jnp
import report
from flax import nnx

x = jnp.arange(8.0).reshape(4, 2)
y = nnx.vmap(lambda x: (x, x.sum()), out_axes=(1, 0))(x)
report.array('out-axes-1', y[0])
report.array('out-axes-0', y[1])

x = jnp.arange(6.0).reshape(3, 2)
out = nnx.vmap(lambda x: {'a': x, 'b': x * 2}, out_axes={'a': 1, 'b': 0})(x)
report.array('dict-a', out['a'])
report.array('dict-b', out['b'])
