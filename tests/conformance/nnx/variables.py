"""Variable types, metadata, [...] access and arithmetic."""

import jax.numpy as jnp
import report
from flax import nnx

p = nnx.Param(jnp.arange(3.0), tag='w')
report.value('type', type(p).__name__)
report.value('tag', p.tag)
report.array('value', p[...])
report.array('plus', p + 1)
report.array('mul', p * p)
report.value('shape', list(p.shape))
bs = nnx.BatchStat(jnp.zeros(2))
report.value('is-param', isinstance(bs, nnx.Param))
report.value('is-variable', isinstance(bs, nnx.Variable))
p[...] = jnp.ones(3)
report.array('assigned', p[...])
report.value('metadata-keys', sorted(k for k in p.get_metadata() if k == 'tag'))
