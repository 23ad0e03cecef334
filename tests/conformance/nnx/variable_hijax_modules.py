"""Modules holding hijax Variables: repr, state/split/merge, jax.jit of the
module, nnx.with_vars conversions (hijax=True/False, only=, mutable=)."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2), hijax=True)
    self.count = nnx.BatchStat(jnp.zeros(()), hijax=True)

  def __call__(self, x):
    self.count[...] += 1
    return x * self.w[...]


m = Model()
report.text('module-repr', repr(m))
state = nnx.state(m)
report.text('state', repr(state))
report.value(
  'state-leaf-types', [type(x).__name__ for x in jax.tree.leaves(state)]
)
graphdef, params, rest = nnx.split(m, nnx.Param, ...)
report.text('params', repr(params))
m2 = nnx.merge(graphdef, params, rest)
report.text('merged-w', repr(m2.w))
report.value('merged-isinstance', isinstance(m2.w, nnx.Param))
report.array('jit-module', jax.jit(lambda m, x: m(x))(m, jnp.full(2, 3.0)))
report.array('count-after-jit', m.count[...])
report.value(
  'pure-dict',
  {k: v.tolist() for k, v in nnx.to_pure_dict(nnx.state(m)).items()},
)


class Plain(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2), tag='a')


n = Plain()
h = nnx.with_vars(n, hijax=True)
report.value(
  'with_vars', [type(h.w).__name__, h.w.hijax, n.w.hijax, h.w is n.w]
)
report.text('with_vars-w', repr(h.w))
report.value('with_vars-meta', h.w.get_metadata())
back = nnx.with_vars(h, hijax=False)
report.text('back-w', repr(back.w))
report.value('keep', nnx.with_vars(h).w is h.w)
frozen = nnx.with_vars(n, hijax=True, mutable=False)
report.text('frozen-w', repr(frozen.w))
report.value('frozen-meta', frozen.w.get_metadata())
report.array('frozen-jit', jax.jit(lambda v: v[...] * 2)(frozen.w))


class Two(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2), tag='a')
    self.b = nnx.BatchStat(jnp.zeros(2))


t = Two()
report.text('with_vars-two', repr(nnx.with_vars(t, hijax=True)))
report.text(
  'with_vars-only', repr(nnx.with_vars(t, hijax=True, only=nnx.Param))
)
report.text('view-order', repr(nnx.view(t)))
with report.warns('vars_as-deprecated'):
  converted = nnx.vars_as(t, hijax=True)
report.value('vars_as', [type(converted.w).__name__, converted.b.hijax])
