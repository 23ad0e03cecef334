"""Raw jax.Ref attributes are state: split/state show them, nnx.jit
mutates them in place, and tree mode rejects a Ref reached twice."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class Holder(nnx.Module):
  def __init__(self):
    self.a = jax.new_ref(jnp.array(1.0))
    self.w = nnx.Param(jnp.ones(2))


h = Holder()
graphdef, state = nnx.split(h)
report.value('state keys', sorted(state.keys()))
report.value('state a is the Ref', state['a'] is h.a)
report.value('leaves', len(jax.tree.leaves(state)))
merged = nnx.merge(graphdef, state)
report.value('merged a type', type(merged.a).__name__)
report.value('merged a is the Ref', merged.a is h.a)
r = jax.new_ref(jnp.array(1))
report.value('split(Ref) state is the Ref', nnx.split(r)[1] is r)


@nnx.jit
def step(m):
  m.a[...] = m.a[...] + 5
  return m.w[...].sum()


report.array('jit output', step(h))
report.array('Ref after jit', h.a[...])
report.value('still a Ref', type(h.a).__name__)
report.array('tree-mode jit', nnx.jit(lambda m: m.a[...] * 2, graph=False)(h))
with report.raises('tree mode split of a shared Ref'):
  nnx.split([r, r], graph=False)


class Lists(nnx.Module):
  def __init__(self):
    self.l = [jax.new_ref(jnp.zeros(2))]


with report.raises('Ref in a static list attribute'):
  nnx.state(Lists())


class Shared(nnx.Module):
  def __init__(self):
    self.a = jax.new_ref(jnp.array(1))
    self.b = self.a


s = Shared()
graphdef, state = nnx.split(s)
report.value('shared Ref: state keys', sorted(state.keys()))
report.value('shared Ref: leaves', len(jax.tree.leaves(state)))
merged = nnx.merge(graphdef, state)
report.value('shared Ref: merged a is b', merged.a is merged.b)
report.value('shared Ref: clone a is b', (lambda c: c.a is c.b)(nnx.clone(s)))


@nnx.jit
def bump(m):
  m.a[...] = m.a[...] + 1
  return m.b[...]


report.array('shared Ref: jit output', bump(s))
report.array('shared Ref: after jit', s.b[...])
report.value('shared Ref: still shared', s.a is s.b)
with report.raises('shared Ref: tree mode split'):
  nnx.split(s, graph=False)
