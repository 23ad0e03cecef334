"""RngStream sampling methods: values equal jax.random with the next key."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

rngs = nnx.Rngs(0, params=1)
report.array('normal', rngs.params.normal((2, 3)))
report.value('count-after-normal', int(rngs.params.count[...]))
report.array('uniform', rngs.params.uniform((4,), minval=-1.0, maxval=2.0))
report.array('bernoulli', rngs.params.bernoulli(0.3, (6,)))
report.array(
  'categorical',
  rngs.params.categorical(jnp.log(jnp.array([0.1, 0.2, 0.7])), shape=(8,)),
)
report.array('randint', rngs.params.randint((5,), 0, 10))
report.array('permutation', rngs.params.permutation(7))
report.array('choice', rngs.params.choice(10, (3,), replace=False))
report.array('bits', rngs.params.bits((3,)))
report.array('truncated_normal', rngs.params.truncated_normal(-1.0, 1.0, (4,)))
report.array('normal-f16', rngs.params.normal((3,), jnp.float16))
report.value('count-final', int(rngs.params.count[...]))
report.array('default-untouched', rngs.default.count[...])
# same numbers as drawing the key by hand
ref = nnx.Rngs(0, params=1)
report.array('by-hand', jax.random.normal(ref.params(), (2, 3)))
with report.raises('key given twice'):
  rngs.params.normal(key=jax.random.key(0))
