"""Rngs sampling methods draw from the default stream."""

import jax.numpy as jnp
import report
from flax import nnx

rngs = nnx.Rngs(3, dropout=5)
report.array('normal', rngs.normal((3,)))
report.array('uniform', rngs.uniform((2, 2)))
report.array('gumbel', rngs.gumbel((3,)))
report.array('exponential', rngs.exponential((3,)))
report.array('laplace', rngs.laplace((3,)))
report.array('logistic', rngs.logistic((3,)))
report.array('cauchy', rngs.cauchy((2,)))
report.array('rademacher', rngs.rademacher((5,)))
report.array('poisson', rngs.poisson(3.0, (4,)))
report.array('gamma', rngs.gamma(2.0, (3,)))
report.array('beta', rngs.beta(2.0, 3.0, (3,)))
report.array('dirichlet', rngs.dirichlet(jnp.array([1.0, 2.0, 3.0]), (2,)))
report.array(
  'multivariate_normal',
  rngs.multivariate_normal(jnp.zeros(2), jnp.eye(2), (3,)),
)
report.value('default-count', int(rngs.default.count[...]))
report.value('dropout-count', int(rngs.dropout.count[...]))
report.array('dropout-stream', rngs.dropout.bernoulli(0.5, (6,)))
