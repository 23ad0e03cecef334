"""Every sampling method of a stream, in one pass, part b (values and dtypes)."""

import jax.numpy as jnp
import report
from flax import nnx

calls = {
  'loggamma': lambda s: s.loggamma(2.0, (2,)),
  'logistic': lambda s: s.logistic((2,)),
  'lognormal': lambda s: s.lognormal(0.5, (2,)),
  'maxwell': lambda s: s.maxwell((2,)),
  'multinomial': lambda s: s.multinomial(5, jnp.array([0.2, 0.3, 0.5])),
  'normal': lambda s: s.normal((2,)),
  'orthogonal': lambda s: s.orthogonal(3),
  'pareto': lambda s: s.pareto(2.0, (2,)),
  'permutation': lambda s: s.permutation(jnp.arange(5)),
  'poisson': lambda s: s.poisson(2.0, (3,)),
  'rademacher': lambda s: s.rademacher((4,)),
  'randint': lambda s: s.randint((3,), -5, 5),
  'rayleigh': lambda s: s.rayleigh(1.0, (2,)),
  't': lambda s: s.t(3.0, (2,)),
  'triangular': lambda s: s.triangular(0.0, 0.5, 1.0, (2,)),
  'truncated_normal': lambda s: s.truncated_normal(-2.0, 2.0, (2,)),
  'uniform': lambda s: s.uniform((2,)),
  'wald': lambda s: s.wald(1.0, (2,)),
  'weibull_min': lambda s: s.weibull_min(1.0, 2.0, (2,)),
}
for name, call in calls.items():
  stream = nnx.Rngs(params=7).params
  report.array(name, call(stream), rtol=1e-4, atol=1e-5)
  report.value(name + '-count', int(stream.count[...]))
