"""Array behaviour of :class:`~flax.nnx.Variable`: a Variable stands in for
its value in NumPy / JAX code (array protocols, arithmetic, comparisons)
and refuses in-place operators (write through ``variable[...]`` instead).

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> w = nnx.Param(jnp.array([1.0, 2.0]))
>>> (w + 1).tolist(), (2 * w).tolist(), (-w).tolist(), len(w)
([2.0, 3.0], [2.0, 4.0], [-1.0, -2.0], 2)
"""

# Every operator calls the value's own method (``value.__add__(other)``,
# ``value.__radd__(other)``), an operand Variable standing for its value,
# so Python's operator protocol does the rest: a ``NotImplemented`` from
# the value lets the other operand try. NumPy's ``__array__`` and
# ``__array_priority__`` come from the value (``Variable.__getattr__``):
# NumPy arrays and scalars defer to a Variable holding a JAX array, whose
# reflected method makes the result a JAX array.


def _dunder(name):
  """``fn(value, *args)`` calling ``value.<name>(*args)``."""

  def call(value, *args):
    return getattr(value, name)(*args)

  call.__name__ = name
  return call


# Binary operators by dunder stem; each gets a forward (``__add__``), a
# reflected (``__radd__``) and a refused in-place (``__iadd__``) method.
_STEMS = (
  'add',
  'sub',
  'mul',
  'matmul',
  'truediv',
  'floordiv',
  'mod',
  'pow',
  'lshift',
  'rshift',
  'and',
  'or',
  'xor',
)
_BINARY = {stem: _dunder(f'__{stem}__') for stem in _STEMS}
_REFLECTED = {stem: _dunder(f'__r{stem}__') for stem in _STEMS}
# The in-place spelling of each binary operator, for the refusal message.
_SYMBOL = {
  'add': '+',
  'sub': '-',
  'mul': '*',
  'matmul': '@',
  'truediv': '/',
  'floordiv': '//',
  'mod': '%',
  'pow': '**',
  'lshift': '<<',
  'rshift': '>>',
  'and': '&',
  'or': '|',
  'xor': '^',
}
# Methods applying a method of the value (``__round__`` takes ``ndigits``,
# 0 by default: ``round(variable)`` keeps the value's type).
_UNARY = {
  '__jax_array__': lambda v: v,
  **{
    name: _dunder(name)
    for name in (
      '__len__',
      '__iter__',
      '__int__',
      '__float__',
      '__complex__',
      '__index__',
      '__neg__',
      '__pos__',
      '__abs__',
      '__invert__',
    )
  },
}
_ROUND = _dunder('__round__')


def inplace_error(symbol: str) -> NotImplementedError:
  """The error of ``variable <symbol>= x`` (Variables refuse in-place
  operators)."""
  return NotImplementedError(
    'In-place operations are no longer supported for Variable.\n'
    f'Use `variable[...] {symbol}= x` instead.'
  )


def install_array_behaviour(cls) -> None:
  """Gives ``cls`` (Variable) the methods above; a ``cls`` operand of a
  binary operator (or of ``==``) stands for its value (``get_value()``)."""

  def value_of(x):
    return x.get_value() if isinstance(x, cls) else x

  def unary(fn):
    return lambda self: fn(self.get_value())

  def binary(fn):
    return lambda self, other: fn(self.get_value(), value_of(other))

  def refuse(symbol):
    def method(self, other):
      raise inplace_error(symbol)

    return method

  def __round__(self, ndigits=0):
    return _ROUND(self.get_value(), ndigits)

  methods = {name: unary(fn) for name, fn in _UNARY.items()}
  for stem in _STEMS:
    methods[f'__{stem}__'] = binary(_BINARY[stem])
    methods[f'__r{stem}__'] = binary(_REFLECTED[stem])
    methods[f'__i{stem}__'] = refuse(_SYMBOL[stem])
  methods.update(
    __round__=__round__,
    __eq__=binary(_dunder('__eq__')),
  )
  # Like arrays: ``==`` compares values, and Variables are unhashable.
  methods['__hash__'] = None
  for name, method in methods.items():
    setattr(cls, name, method)
