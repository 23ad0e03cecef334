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
