"""Array behaviour of :class:`~flax.nnx.Variable`: a Variable stands in for
its value in NumPy / JAX code (array protocols, arithmetic, comparisons)
and refuses in-place operators (write through ``variable[...]`` instead).

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> w = nnx.Param(jnp.array([1.0, 2.0]))
>>> (w + 1).tolist(), (2 * w).tolist(), (-w).tolist(), len(w)
([2.0, 3.0], [2.0, 4.0], [-1.0, -2.0], 2)
"""

import operator

# Binary operators: dunder stem -> operator function. Each gets a forward
# (``__add__``) and a reflected (``__radd__``) method; a Variable operand
# on either side stands for its value.
_BINARY = {
  'add': operator.add,
  'sub': operator.sub,
  'mul': operator.mul,
  'matmul': operator.matmul,
  'truediv': operator.truediv,
  'floordiv': operator.floordiv,
  'mod': operator.mod,
  'pow': operator.pow,
  'lshift': operator.lshift,
  'rshift': operator.rshift,
  'and': operator.and_,
  'or': operator.or_,
  'xor': operator.xor,
}
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
# Methods applying a function to the value alone.
_UNARY = {
  '__jax_array__': lambda v: v,
  '__len__': len,
  '__iter__': iter,
  '__int__': int,
  '__float__': float,
  '__index__': lambda v: v.__index__(),
  '__neg__': operator.neg,
  '__pos__': operator.pos,
  '__abs__': abs,
  '__invert__': operator.invert,
}


def install_array_behaviour(cls) -> None:
  """Gives ``cls`` (Variable) the methods above; a ``cls`` operand of a
  binary operator (or of ``==``) stands for its value (``get_value()``)."""

  def value_of(x):
    return x.get_value() if isinstance(x, cls) else x

  def unary(fn):
    return lambda self: fn(self.get_value())

  def forward(fn):
    return lambda self, other: fn(self.get_value(), value_of(other))

  def reflected(fn):
    return lambda self, other: fn(value_of(other), self.get_value())

  def refuse(symbol):
    def method(self, other):
      raise NotImplementedError(
        'In-place operations on a Variable are not supported; use '
        f'`variable[...] {symbol}= x` instead.'
      )

    return method

  def __array__(self, dtype=None, copy=None):
    import numpy as np

    return np.asarray(self.get_value(), dtype=dtype)

  def __eq__(self, other):
    return self.get_value() == value_of(other)

  methods = {name: unary(fn) for name, fn in _UNARY.items()}
  for stem, fn in _BINARY.items():
    methods[f'__{stem}__'] = forward(fn)
    methods[f'__r{stem}__'] = reflected(fn)
    methods[f'__i{stem}__'] = refuse(_SYMBOL[stem])
  methods.update(__array__=__array__, __eq__=__eq__)
  # Like arrays: ``==`` compares values, and Variables are unhashable.
  methods['__hash__'] = None
  for name, method in methods.items():
    setattr(cls, name, method)
