"""split/state/variables return the graph's own Variables; merge reuses the
State's Variables; copy=True and recreate_variables=False."""

import warnings

import jax.numpy as jnp
import report
from flax import nnx


class N(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2), tag='x')
    self.c = 1


n = N()
g, s = nnx.split(n)
report.value('split-same', s['a'] is n.a)
report.value(
  'state-same', [nnx.state(n)['a'] is n.a, nnx.variables(n)['a'] is n.a]
)
report.value('merge-same', nnx.merge(g, s).a is s['a'])
report.value('merge-copy', nnx.merge(g, s, copy=True).a is s['a'])
report.value(
  'merge-norecreate', nnx.merge(g, s, recreate_variables=False).a is s['a']
)
s['a'][...] = jnp.zeros(2)
report.array('written-through', n.a[...])
with warnings.catch_warnings():
  warnings.simplefilter('ignore')
  pure = nnx.pure(s)
m = nnx.merge(g, pure)
report.value('recreated', [type(m.a).__name__, m.a.get_metadata('tag')])
m2 = nnx.merge(g, pure, recreate_variables=False)
report.value('not-recreated', type(m2.a).__name__)
with report.warns('pure-deprecated'):
  nnx.pure(s)
