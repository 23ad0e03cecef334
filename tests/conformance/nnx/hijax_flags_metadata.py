"""Hijax flag plumbing: Variable.copy(hijax=True) and from_metadata with
hijax=True make hijax Variables; metadata of a traced hijax Variable is
readable inside jax.jit."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

v = nnx.Param(jnp.array(1.0), tag='hi', hijax=True)
seen = []


@jax.jit
def f(v, a):
  v[...] = a
  seen.append(v.tag)
  return v + 2


report.array('output', f(v, 10.0))
report.array('value after jit', v[...])
report.value('tag inside jit', seen)
c = nnx.Variable(jnp.array(1)).copy(hijax=True, ref=False)
report.value('copy(hijax=True).hijax', c.hijax)
report.value('copy(hijax=True) type', type(c).__name__)
report.array('copy value', c[...])
m = nnx.Param.from_metadata(jnp.array(1.0), {'hijax': True, 'ref': False})
report.value('from_metadata(hijax=True).hijax', m.hijax)
report.value('from_metadata isinstance Param', isinstance(m, nnx.Param))
report.value('plain copy stays plain', nnx.Param(jnp.ones(1)).copy().hijax)
