"""nnx.tabulate: which None / empty parts of inputs, outputs and Variable
metadata a table shows, and custom metadata objects shown by their repr."""

import jax.numpy as jnp
import report
from flax import nnx

wide = {'width': 200, 'force_terminal': False}


class Tag:
  def __init__(self, name):
    self.name = name

  def __repr__(self):
    return f'Tag<{self.name}>'


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((2, 3)), tag=Tag('w'))
    self.v = nnx.Param(
      jnp.ones(3),
      obj=Tag('v'),
      tags=[Tag(1), None],
      lead=[None, 1],
      by_name={'k': Tag(2), 'gone': None},
      empty=[],
    )
    self.u = nnx.Param(jnp.ones(1), nothing=None)

  def __call__(self, x, mask=None, *, kw=None, opt={}, d=None):
    if isinstance(x, list):
      x = x[0]
    return x @ self.w[...]


x = jnp.ones((1, 2))
model = Model()
calls = {
  'plain': ((x,), {}),
  'mask keyword None': ((x,), {'mask': None}),
  'positional None': ((x, None), {}),
  'positional empty dict': ((x, {}), {}),
  'dict of arrays': ((x, {'a': jnp.ones(2), 'b': {'c': jnp.zeros(1)}}), {}),
  'keyword-only None and empty': ((x,), {'kw': None, 'opt': {}}),
  'keyword None beside an array': ((x,), {'kw': jnp.ones(3), 'd': None}),
  'dict with None entries': ((x, {'a': jnp.ones(2), 'n': None}), {}),
  'nested lists': ((x, [None, {}]), {'kw': (), 'd': [1, None]}),
  'trailing and inner parts': (([x, {'a': None}, x, None],), {}),
}
for label, (args, kwargs) in calls.items():
  report.text(label, nnx.tabulate(model, *args, console_kwargs=wide, **kwargs))


class Sub(nnx.Module):
  def __init__(self):
    self.p = nnx.Param(jnp.ones(2))

  def __call__(self, x, mask=None, extra={}):
    return {'out': x, 'none': None, 'empty': {}, 'pair': (x, None)}


class Top(nnx.Module):
  def __init__(self):
    self.s = Sub()

  def __call__(self, x):
    self.s(x, mask=None)
    self.s(x, None, {})
    return self.s(x, extra={'q': None})['out']


report.text('nested calls', nnx.tabulate(Top(), x, console_kwargs=wide))


class Returns(nnx.Module):
  def __init__(self, value):
    self.value = value

  def __call__(self, x):
    return self.value(x)


outputs = {
  'empty dict output': lambda x: {},
  'only None entries': lambda x: {'n': None},
  'tuple with trailing None': lambda x: (x, None),
  'None and empty': lambda x: (None, {}),
  'dict pruned': lambda x: {'a': x, 'b': [], 'c': {'d': None, 'e': 1}},
}
for label, fn in outputs.items():
  report.text(label, nnx.tabulate(Returns(fn), x, console_kwargs=wide))
