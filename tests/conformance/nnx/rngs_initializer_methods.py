"""Initializer methods of Rngs/RngStream: keys drawn when called."""

import jax.numpy as jnp
import report
from flax import nnx

rngs = nnx.Rngs(0, params=2)
init = rngs.params.lecun_normal()
report.value('count-after-build', int(rngs.params.count[...]))
report.array('lecun_normal', init((3, 4)))
report.array('lecun_normal-again', init((3, 4)))
report.value('count-after-calls', int(rngs.params.count[...]))
report.array('glorot_uniform', rngs.glorot_uniform()((2, 5)))
report.array('he_normal-f16', rngs.he_normal()((4, 2), jnp.float16))
report.array('kaiming_uniform', rngs.params.kaiming_uniform()((2, 2)))
report.array('xavier_normal', rngs.xavier_normal()((3, 3)))
report.array('lecun_uniform', rngs.lecun_uniform()((2, 3)))
report.array('he_uniform', rngs.he_uniform()((2, 3)))
report.array('glorot_normal', rngs.glorot_normal()((2, 3)))
report.array('kaiming_normal', rngs.kaiming_normal()((2, 3)))
report.array('xavier_uniform', rngs.xavier_uniform()((2, 3)))
report.array(
  'variance_scaling',
  rngs.params.variance_scaling(2.0, 'fan_out', 'uniform')((4, 3)),
)
report.array(
  'delta_orthogonal', rngs.delta_orthogonal()((3, 3, 2, 2)), atol=1e-5
)
report.value('default-count', int(rngs.default.count[...]))
