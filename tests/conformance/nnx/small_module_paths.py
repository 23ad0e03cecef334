"""flax.nnx.ids, tracers, deprecations and compat."""

import report
from flax import nnx
from flax.nnx import compat, deprecations, ids, tracers

a, b = ids.uuid(), ids.uuid()
report.value('uuid', [a == b, a == a, type(a).__name__])
report.text('uuid-repr', repr(ids.UUID(5)))
report.value('uuid-hash', hash(ids.UUID(5)) == hash(5))
report.value('trace-valid', tracers.TraceState().is_valid())


def add_one(x):
  return x + 1


old = deprecations.deprecated(add_one)
with report.warns('deprecated'):
  report.value('deprecated-result', [old(1), old.__name__])
report.value('compat-iter_modules', compat.iter_modules.keywords)
report.value('compat-view', compat.view.keywords)


class M(nnx.Module):
  def __init__(self):
    self.sub = nnx.Linear(1, 1, rngs=nnx.Rngs(0))


report.value('compat-call', [p for p, _ in compat.iter_modules(M())])
