"""Array behaviour of hijax Variables: operators, array protocols and array
methods read the value through ``get_variable_p``, on a
:class:`~flax.nnx.variablelib.HijaxVariable` and on its tracers (JAX
forwards a tracer's operators to ``aval._<name>`` and its methods to
``aval.<name>``).

>>> import jax, jax.numpy as jnp
>>> from flax import nnx
>>> v = nnx.Param(jnp.arange(3.0), hijax=True)
>>> (v + 1).tolist(), jax.jit(lambda v: (2 * v).sum())(v).item()
([1.0, 2.0, 3.0], 6.0)
"""

import numpy as np
from jax._src import core

from flax.nnx import _variable_ops


def install(HijaxVariable, AbstractVariable, _read, _values_of) -> None:
  """Gives ``HijaxVariable`` and its JAX type ``AbstractVariable`` the array
  behaviour; ``_read`` gives the plain Variable a hijax one holds and
  ``_values_of`` the values of its arguments (hijax ones read)."""

  def _value_op(fn):
    def method(hijax_var, *args):
      return fn(*_values_of(hijax_var, *args))

    return method

  def _array_method(name):
    def method(hijax_var, *args, **kwargs):
      return getattr(_read(hijax_var).get_value(), name)(*args, **kwargs)

    return method

  def _array_property(name):
    return lambda hijax_var: getattr(_read(hijax_var).get_value(), name)

  unary = dict(_variable_ops._UNARY)
  # Besides the plain Variable's operators, a hijax one has ``divmod``
  # (no ordering comparisons, as the plain one).
  binary = dict(_variable_ops._BINARY)
  reflected = dict(_variable_ops._REFLECTED)
  binary['divmod'] = _variable_ops._dunder('__divmod__')
  reflected['divmod'] = _variable_ops._dunder('__rdivmod__')

  def array(hv, dtype=None, copy=None):
    return np.asarray(_read(hv).get_value(), dtype=dtype)

  def binary_op(fn):
    def method(hijax_var, other):
      return fn(*_values_of(hijax_var, other))

    return method

  def round_(hv, ndigits=0):
    return _variable_ops._ROUND(_read(hv).get_value(), ndigits)

  for name, fn in unary.items():
    if name not in ('__len__', '__iter__'):  # HijaxVariable has its own
      setattr(HijaxVariable, name, _value_op(fn))
  for stem in binary:
    setattr(HijaxVariable, f'__{stem}__', binary_op(binary[stem]))
    setattr(HijaxVariable, f'__r{stem}__', binary_op(reflected[stem]))
  HijaxVariable.__array__ = array
  HijaxVariable.__round__ = round_

  # The same behaviour on tracers: JAX forwards a tracer's operators to
  # ``aval._<name>`` and its methods to ``aval.<name>`` (aval_method).
  av = AbstractVariable
  av._getitem = staticmethod(HijaxVariable.__getitem__)
  av._setitem = staticmethod(HijaxVariable.__setitem__)
  av._len = staticmethod(HijaxVariable.__len__)
  av._iter = staticmethod(HijaxVariable.__iter__)
  av._contains = staticmethod(HijaxVariable.__contains__)
  for name, fn in unary.items():
    if name in ('__neg__', '__pos__', '__abs__', '__invert__'):
      setattr(av, f'_{name[2:-2]}', staticmethod(_value_op(fn)))
  for stem in binary:
    setattr(av, f'_{stem}', staticmethod(binary_op(binary[stem])))
    setattr(av, f'_r{stem}', staticmethod(binary_op(reflected[stem])))
  av._round = staticmethod(round_)
  av.__jax_array__ = core.aval_method(_value_op(lambda v: v))
  for name in (
    'get_value',
    'set_value',
    'get_raw_value',
    'set_raw_value',
    'create_value',
    'get_metadata',
    'has_metadata',
    'set_metadata',
    'del_metadata',
    'add_axis',
    'remove_axis',
    'copy',
    'replace',
    'to_state',
    'copy_from',
    'update_from_state',
  ):
    setattr(av, name, core.aval_method(getattr(HijaxVariable, name)))
  av.type_state = core.aval_method(core.cur_qdd)
  av.value = core.aval_property(lambda t: _read(t).get_value())
  av.metadata = core.aval_property(lambda t: _read(t).get_metadata())
  av.raw_value = core.aval_property(lambda t: _read(t).get_raw_value())

  # The slots NNX's graph functions read on a Variable (``nnx.state``,
  # ``nnx.split``, ...): a traced hijax Variable answers them with what it
  # holds (a fresh metadata dict; writes go through its methods).
  av._raw_value = core.aval_property(lambda t: _read(t).get_raw_value())
  av._var_metadata = core.aval_property(lambda t: _read(t)._var_metadata)
  for name in _ARRAY_METHODS:
    setattr(av, name, core.aval_method(_array_method(name)))
  for name in ('T', 'mT', 'real', 'imag', 'at', 'nbytes', 'itemsize'):
    setattr(av, name, core.aval_property(_array_property(name)))


_ARRAY_METHODS = (
  'all',
  'any',
  'argmax',
  'argmin',
  'astype',
  'clip',
  'conj',
  'cumsum',
  'cumprod',
  'dot',
  'flatten',
  'item',
  'max',
  'mean',
  'min',
  'prod',
  'ravel',
  'reshape',
  'round',
  'squeeze',
  'std',
  'sum',
  'swapaxes',
  'take',
  'transpose',
  'var',
)
