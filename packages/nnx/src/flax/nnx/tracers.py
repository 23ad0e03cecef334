"""The JAX trace an NNX object was created in.

Objects remember the trace they were created at; mutating them from inside
another trace (e.g. a function passed to ``jax.jit`` that closes over them)
is an error.

>>> from flax.nnx import tracers
>>> tracers.TraceState().is_valid()
True
"""

from flax.nnx import reprlib
from flax.nnx._common import trace_state


def current_jax_trace():
  """An opaque token of the current JAX trace (compared with ``==``)."""
  return trace_state()


class TraceState(reprlib.Representable):
  """Records the JAX trace current at construction."""

  __slots__ = ('_jax_trace',)

  def __init__(self):
    self._jax_trace = current_jax_trace()

  @classmethod
  def at(cls, jax_trace) -> 'TraceState':
    """A TraceState recording ``jax_trace`` (a token of
    :func:`current_jax_trace`) rather than the current trace."""
    state = object.__new__(cls)
    state._jax_trace = jax_trace
    return state

  jax_trace = property(
    lambda self: self._jax_trace, doc='The trace recorded at construction.'
  )

  def is_valid(self) -> bool:
    """Whether the current JAX trace is the recorded one."""
    return current_jax_trace() == self._jax_trace

  def __nnx_repr__(self):
    yield reprlib.Object(type=type(self))
    yield reprlib.Attr('jax_trace', self._jax_trace)

  def __eq__(self, other):
    return isinstance(other, TraceState) and self._jax_trace == other._jax_trace

  def __hash__(self):
    return hash(self._jax_trace)
