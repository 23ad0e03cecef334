"""Reading or writing Variable.value / Variable.raw_value warns (message
text and where it points); the replacements do not."""

import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import report
from flax import nnx


def caught(label, fn):
  """Runs fn; reports the messages and file names of its warnings."""
  with warnings.catch_warnings(record=True) as ws:
    warnings.simplefilter('always')
    out = fn()
  report.value(
    label,
    [
      [w.category.__name__, str(w.message), os.path.basename(w.filename)]
      for w in ws
    ],
  )
  return out


v = nnx.Param(jnp.arange(3.0))
report.array('get', caught('get-warning', lambda: v.value))


def set_value():
  v.value = jnp.ones(3)


caught('set-warning', set_value)
report.array('after-set', v[...])
report.array('raw-get', caught('raw-get-warning', lambda: v.raw_value))


def set_raw():
  v.raw_value = jnp.zeros(3)


caught('raw-set-warning', set_raw)
report.array('after-raw-set', v.get_raw_value())
caught('getattr', lambda: getattr(v, 'value'))
caught('hasattr', lambda: hasattr(v, 'value'))
report.value(
  'int-variable', caught('int-warning', lambda: nnx.Variable(3).value)
)
report.value(
  'list-variable', caught('list-warning', lambda: nnx.Variable([1, 2]).value)
)


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.n = nnx.BatchStat(jnp.zeros((), jnp.int32))

  def __call__(self, x):
    self.n[...] += 1
    return x * self.w


with report.warns('replacements'):
  w = nnx.Param(jnp.arange(3.0))
  w.get_value()
  w[...]
  w[1]
  w.set_value(jnp.ones(3))
  w[...] = jnp.zeros(3)
  w[0] = 2.0
  w.get_raw_value()
  w.set_raw_value(jnp.ones(3))
  repr(w)
  jnp.asarray(w)
  np.asarray(w)
  _ = (w + 1, 2 * w, -w, w == w, len(w), w.shape, w.dtype, w.sum())
  m = Model()
  m(jnp.ones(2))
  graphdef, state = nnx.split(m)
  nnx.merge(graphdef, state)
  nnx.update(m, nnx.state(m))
  nnx.clone(m)
  jax.tree.map(lambda x: x, state)
  nnx.to_pure_dict(state)
  nnx.jit(lambda m, x: m(x))(m, jnp.ones(2))
  rngs = nnx.Rngs(0)
  _ = (rngs.params(), rngs(), rngs.params.key[...])
report.array('replacements-n', m.n[...])
