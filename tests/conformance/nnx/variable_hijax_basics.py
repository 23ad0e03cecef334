"""Hijax Variables: type, isinstance, repr, metadata and get/set outside
transforms (``nnx.Param(x, hijax=True)`` and ``nnx.var_defaults``)."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import variablelib

v = nnx.Param(jnp.ones(3), hijax=True, tag='x')
report.value('type', type(v).__name__)
report.value('metatype', type(type(v)).__name__)
report.value(
  'isinstance',
  [
    isinstance(v, nnx.Variable),
    isinstance(v, nnx.Param),
    isinstance(v, nnx.BatchStat),
    isinstance(v, variablelib.HijaxVariable),
  ],
)
report.value('flags', [v.hijax, v.ref, v.type.__name__, v.var_type.__name__])
report.text('repr', repr(v))
report.value('metadata', v.get_metadata())
report.value('tag', v.tag)
report.array('get', v[...])
report.array('index', v[1])
v[...] = jnp.arange(3.0)
report.array('after-setitem', v.get_value())
v.set_value(jnp.full(3, 5.0))
report.array('after-set_value', v[...])
report.array('add', v + 1)
report.array('rmul', 2 * v)
report.value('len', len(v))
report.array('sum', v.sum())
report.value('leaves-are-self', jax.tree.leaves(v)[0] is v)
report.text('typeof', str(jax.typeof(v)))
report.value('typeof-class', type(jax.typeof(v)).__name__)
report.value(
  'typeof-eq',
  [
    jax.typeof(v) == jax.typeof(nnx.Param(jnp.zeros(5), hijax=True)),
    jax.typeof(v) == jax.typeof(nnx.BatchStat(jnp.zeros(3), hijax=True)),
  ],
)
with nnx.var_defaults(hijax=True):
  p = nnx.BatchStat(jnp.zeros(2))
  report.text('defaults', repr(nnx.var_defaults()))
report.value('default-type', [type(p).__name__, p.hijax])
report.value('plain-after', nnx.Param(jnp.ones(1)).hijax)
c = v.copy()
c[...] = jnp.zeros(3)
report.value('copy', [type(c).__name__, c is v])
report.array('copy-leaves-original', v[...])
report.text('ref-repr', repr(nnx.Param(jnp.ones(2), hijax=True, ref=True)))
