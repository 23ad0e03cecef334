"""nnx.with_rngs refuses graph mode with graph updates (also under the
defaults) and draws nothing; graph_updates=False works."""

import report
from flax import nnx

r = nnx.Rngs(params=0, dropout=1)
with report.raises('graph-mode-updates'):
  nnx.with_rngs(r, split={'params': 3}, graph=True, graph_updates=True)
report.value('count-after', r.params.count[...].tolist())

with report.raises('defaults'):
  nnx.with_rngs(r, split={'params': 3})
o = nnx.with_rngs(r, split={'params': 3}, graph=True, graph_updates=False)
report.value(
  'no-updates', [list(o.params.key.shape), r.params.count[...].tolist()]
)
