"""Random-sampling methods shared by :class:`Rngs` and :class:`RngStream`.

Every ``jax.random`` sampler becomes a method that draws the next key of
the stream (``self()``) and passes it as the sampler's ``key``; the
method shows the sampler's own signature. Initializer methods
(``lecun_normal``, ``glorot_uniform``, ...) build the ``jax.nn``
initializer and return a keyless one that draws a key when it is called.

>>> from flax import nnx
>>> import jax
>>> rngs = nnx.Rngs(0)
>>> x = rngs.normal((2,))
>>> y = jax.random.normal(nnx.Rngs(0)(), (2,))
>>> bool((x == y).all())
True
"""

import functools
import typing as tp

import jax

_SAMPLERS = (
  'ball',
  'bernoulli',
  'beta',
  'binomial',
  'bits',
  'categorical',
  'cauchy',
  'chisquare',
  'choice',
  'dirichlet',
  'double_sided_maxwell',
  'exponential',
  'f',
  'gamma',
  'generalized_normal',
  'geometric',
  'gumbel',
  'laplace',
  'loggamma',
  'logistic',
  'lognormal',
  'maxwell',
  'multinomial',
  'multivariate_normal',
  'normal',
  'orthogonal',
  'pareto',
  'permutation',
  'poisson',
  'rademacher',
  'randint',
  'rayleigh',
  't',
  'triangular',
  'truncated_normal',
  'uniform',
  'wald',
  'weibull_min',
)

_INITIALIZERS = (
  'delta_orthogonal',
  'glorot_normal',
  'glorot_uniform',
  'he_normal',
  'he_uniform',
  'kaiming_normal',
  'kaiming_uniform',
  'lecun_normal',
  'lecun_uniform',
  'variance_scaling',
  'xavier_normal',
  'xavier_uniform',
)


class KeylessInitializer(tp.Protocol):
  """An initializer whose key comes from an Rng stream."""

  def __call__(
    self, shape, dtype: tp.Any | None = None, out_sharding=None
  ) -> jax.Array: ...


def _sampler_method(name):
  sampler = getattr(jax.random, name)

  @functools.wraps(sampler)
  def method(self, *args, **kwargs):
    return sampler(self(), *args, **kwargs)

  method.__doc__ = (
    f'Samples ``jax.random.{name}`` with the next key of this stream; '
    'the other arguments are those of the sampler.'
  )
  return method


def _initializer_method(name):
  make = getattr(jax.nn.initializers, name)

  def method(self, *args, **kwargs) -> KeylessInitializer:
    init = make(*args, **kwargs)

    def keyless(shape, dtype=None, out_sharding=None):
      extra = {} if out_sharding is None else {'out_sharding': out_sharding}
      if dtype is None:
        return init(self(), shape, **extra)
      return init(self(), shape, dtype, **extra)

    return keyless

  method.__name__ = method.__qualname__ = name
  method.__doc__ = (
    f'Builds ``jax.nn.initializers.{name}(*args, **kwargs)`` and returns '
    'an initializer ``(shape, dtype=None, out_sharding=None)`` that draws '
    'its key from this stream each time it is called.'
  )
  return method


class RngMethods:
  """Mixin: sampling and initializer methods over ``self()`` keys."""

  __slots__ = ()


for _name in _SAMPLERS:
  setattr(RngMethods, _name, _sampler_method(_name))
for _name in _INITIALIZERS:
  setattr(RngMethods, _name, _initializer_method(_name))
del _name
