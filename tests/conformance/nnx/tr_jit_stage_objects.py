"""nnx.jit(...).trace / .lower / .compile return Flax's staged classes in
every mode; a Compiled is called with Modules and updates them."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class Counter(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.array([1.0, 2.0]))
    self.n = nnx.BatchStat(jnp.array(0))


def step(c, x):
  c.n[...] += 1
  return c.w[...] * x


for label, kw in [
  ('updates', dict()),
  ('tree', dict(graph=False)),
  ('no-updates', dict(graph_updates=False)),
]:
  f = nnx.jit(step, **kw)
  report.text(f'{label}-wrapper', type(f).__name__)
  c = Counter()
  traced = f.trace(c, 3.0)
  report.text(f'{label}-traced', type(traced).__name__)
  report.value(
    f'{label}-traced-is-jax', isinstance(traced.traced, jax.stages.Traced)
  )
  report.value(f'{label}-donate', list(traced.donate_argnums))
  lowered = traced.lower()
  report.text(f'{label}-lowered', type(lowered).__name__)
  report.value(f'{label}-as-text-module', 'module' in lowered.as_text())
  compiled = lowered.compile()
  report.text(f'{label}-compiled', type(compiled).__name__)
  report.array(f'{label}-call', compiled(c, 3.0))
  report.array(f'{label}-count', c.n[...])
  report.text(f'{label}-lower-direct', type(f.lower(c, 1.0)).__name__)
  report.value(f'{label}-compiled-text', isinstance(compiled.as_text(), str))
  report.value(f'{label}-jit-wrapped', compiled.jit_wrapped is f)

c = Counter()
p = nnx.jit_partial(step, c, graph_updates=False)
report.text('partial-wrapper', type(p).__name__)
report.text('partial-traced', type(p.trace(2.0)).__name__)
lowered = p.lower(2.0)
report.text('partial-lowered', type(lowered).__name__)
compiled = lowered.compile()
report.text('partial-compiled', type(compiled).__name__)
report.array('partial-call', compiled(2.0))
report.array('partial-count', c.n[...])


def scaled(c, k):
  c.n[...] += 1
  return c.w[...] * k


for label, kw in [
  ('updates', dict()),
  ('tree', dict(graph=False)),
  ('no-updates', dict(graph_updates=False)),
]:
  c = Counter()
  out = nnx.jit(scaled, static_argnums=1, **kw).eval_shape(c, 2)
  report.text(f'{label}-eval-shape', repr(out))
  report.array(f'{label}-eval-shape-count', c.n[...])
  if kw:
    with report.raises(f'{label}-eval-shape-alias'):
      nnx.jit(lambda c: c, **kw).eval_shape(c)
  else:
    abstract = nnx.jit(lambda c: c).eval_shape(c)
    report.value('eval-shape-copy', abstract is not c)
    report.text('eval-shape-abstract-w', repr(abstract.w.value))
