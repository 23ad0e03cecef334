"""Every sampling method of a stream, in one pass, part a (values and dtypes)."""

import jax.numpy as jnp
import report
from flax import nnx

calls = {
  'ball': lambda s: s.ball(3, shape=(2,)),
  'bernoulli': lambda s: s.bernoulli(0.5, (3,)),
  'beta': lambda s: s.beta(1.5, 2.0, (2,)),
  'binomial': lambda s: s.binomial(10, 0.3, (3,)),
  'bits': lambda s: s.bits((2,)),
  'categorical': lambda s: s.categorical(jnp.zeros(4), shape=(3,)),
  'cauchy': lambda s: s.cauchy((2,)),
  'chisquare': lambda s: s.chisquare(3.0, (2,)),
  'choice': lambda s: s.choice(5, (2,)),
  'dirichlet': lambda s: s.dirichlet(jnp.ones(3)),
  'double_sided_maxwell': lambda s: s.double_sided_maxwell(0.0, 1.0, (2,)),
  'exponential': lambda s: s.exponential((2,)),
  'f': lambda s: s.f(2.0, 3.0, (2,)),
  'gamma': lambda s: s.gamma(1.0, (2,)),
  'generalized_normal': lambda s: s.generalized_normal(1.5, (2,)),
  'geometric': lambda s: s.geometric(0.4, (3,)),
  'gumbel': lambda s: s.gumbel((2,)),
  'laplace': lambda s: s.laplace((2,)),
}
for name, call in calls.items():
  stream = nnx.Rngs(params=7).params
  report.array(name, call(stream), rtol=1e-4, atol=1e-5)
  report.value(name + '-count', int(stream.count[...]))
