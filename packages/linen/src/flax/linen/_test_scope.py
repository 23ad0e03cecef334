"""``TestScope``: a ``Scope`` whose PRNG keys are all ``jax.random.key(0)``.

Handy in unit tests that bind a Module straight to a scope and want the
same key whatever stream is asked for.

>>> import jax
>>> from flax.linen.module import TestScope
>>> scope = TestScope({}, rngs={}, mutable=True)
>>> bool(scope.make_rng('dropout') == jax.random.key(0))
True
"""

import jax

from flax.core.scope import Scope


class TestScope(Scope):
  """A ``Scope`` whose ``make_rng`` always returns ``jax.random.key(0)``.

  The streams given in ``rngs`` are neither read nor advanced, and a
  stream that was not given is no error. Child scopes made with ``push``
  are ordinary ``Scope`` objects.

  >>> import jax, jax.numpy as jnp
  >>> from flax import linen as nn
  >>> from flax.linen.module import TestScope
  >>> scope = TestScope({}, rngs={'params': jax.random.key(1)}, mutable=True)
  >>> w = scope.param('w', jax.random.normal, (2,))
  >>> bool((w == jax.random.normal(jax.random.key(0), (2,))).all())
  True
  >>> scope.rng_counters
  {'params': 0}
  """

  # Constant initializers may not skip ``make_rng`` here (see Scope.param).
  _keys_from_streams = False

  def make_rng(self, name):
    del name  # every stream gives the same key
    return jax.random.key(0)


TestScope.__module__ = 'flax.linen.module'
