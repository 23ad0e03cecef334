"""nnx.iter_modules / Module.iter_modules find Modules held in plain
lists, tuples and dicts (nnx.data attributes, nested at any depth), in graph
and in tree mode, children first with keys sorted."""

import warnings

import report
from flax import nnx


class Sub(nnx.Module):
  def __init__(self, rngs):
    self.d = nnx.Dropout(0.1, rngs=rngs)


class Block(nnx.Module):
  def __init__(self, *, rngs):
    self.lst = nnx.data([nnx.Linear(1, 1, rngs=rngs), Sub(rngs)])
    self.dct = nnx.data({'a': nnx.Linear(1, 1, rngs=rngs)})
    self.tup = nnx.data((nnx.BatchNorm(1, rngs=rngs),))
    self.nested = nnx.data(
      [[nnx.Linear(1, 1, rngs=rngs)], {'x': (nnx.LayerNorm(1, rngs=rngs),)}]
    )
    self.nl = nnx.List([nnx.RMSNorm(1, rngs=rngs)])
    self.nothing = nnx.data(None)


def listing(pairs):
  return [[[str(k) for k in p], type(m).__name__] for p, m in pairs]


m = Block(rngs=nnx.Rngs(0, dropout=1))
report.value('graph', listing(nnx.iter_modules(m, graph=True)))
report.value('tree', listing(nnx.iter_modules(m, graph=False)))
with nnx.set_graph_mode(False):
  report.value('tree-default', listing(nnx.iter_modules(m)))
with warnings.catch_warnings():
  warnings.simplefilter('ignore', DeprecationWarning)
  report.value('method', listing(m.iter_modules()))
report.value('count', len(list(nnx.iter_modules(m))))
report.value('children', listing(nnx.iter_children(m)))
m.eval()
report.value(
  'eval-reaches-containers',
  [m.lst[1].d.deterministic, m.tup[0].use_running_average],
)
