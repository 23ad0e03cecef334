"""Helpers to detect JAX transforms that cross Flax's stateful objects.

A :class:`~flax.core.Scope` remembers the JAX trace that was active when it
was created. Using it under a different trace (for example inside a raw
``jax.vmap`` of a function that closes over the scope) would leak tracers
into the variables, so it is refused with ``JaxTransformError``.
"""

from jax._src import core as _jax_core

from flax import errors


def current_trace():
  """Returns an opaque token naming the innermost active JAX trace."""
  return _jax_core.get_opaque_trace_state(convention='flax')


def check_trace_level(base_level):
  """Raises ``JaxTransformError`` if the current trace is not ``base_level``.

  Args:
    base_level: a token returned by :func:`current_trace` earlier.
  """
  level = current_trace()
  if level != base_level:
    raise errors.JaxTransformError()
