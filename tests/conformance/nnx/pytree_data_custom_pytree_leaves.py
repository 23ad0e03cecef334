"""A registered dataclass (flags, step count, a function) held by an
nnx.data attribute: only its arrays are state, so nnx.jit and nnx.split
see arrays; mixed containers under nnx.data; tree mode keeps every leaf."""

import dataclasses

import jax
import jax.numpy as jnp
import report
from flax import nnx


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Spec:
  t1: bool
  steps: int
  fn: object


class M(nnx.Module):
  def __init__(self, spec, extra=None):
    self.w = nnx.Param(jnp.arange(3.0))
    self.spec = nnx.data(spec)
    self.extra = nnx.data(extra)


def run(m, x):
  y = x * m.w
  for _ in range(m.spec.steps):
    y = m.spec.fn(y)
  return y


def paths(state):
  return ['/'.join(map(str, p)) for p, _ in nnx.to_flat_state(state)]


report.array('nnx.jit', nnx.jit(run)(M(Spec(True, 2, jnp.sin)), jnp.ones(3)))
graphdef, state = nnx.split(M(Spec(True, 2, jnp.sin)))
report.value('split paths', paths(state))
report.value('merged spec steps', nnx.merge(graphdef, state).spec.steps)
report.value(
  'tree mode paths', paths(nnx.split(M(Spec(True, 2, jnp.sin)), graph=False)[1])
)
for label, value in [
  ('spec with array', Spec(True, jnp.array(2), jnp.sin)),
  ('tuple', (1, jnp.ones(2), 'a')),
  ('list', [True, 2.0, jnp.zeros(1)]),
  ('dict', {'b': 1, 'a': jnp.ones(1), 'c': 'x'}),
  ('static tuple', (1, 2)),
  ('nested', [Spec(False, 1, None), {'q': (3, jnp.ones(1))}]),
  ('int', 3),
]:
  report.value(
    f'paths {label}', paths(nnx.state(M(Spec(True, 2, jnp.sin), value)))
  )
m = M(Spec(True, 2, jnp.sin), (1, jnp.ones(3), 'a'))
report.array(
  'nnx.vmap',
  nnx.vmap(lambda m, x: run(m, x) + m.extra[1], in_axes=(None, 0))(
    m, jnp.ones((2, 3))
  ),
)


@nnx.jit
def update(m):
  m.w[...] += 1.0
  m.spec = Spec(False, 1, jnp.cos)


update(m)
report.value('updated spec', [m.spec.t1, m.spec.steps])
report.array('updated w', m.w[...])
