"""An empty nnx.Sequential is the identity."""

import report
from flax import nnx

s = nnx.Sequential()
report.value('one argument', s(12))
report.value('two arguments', list(s(1, 2)))
report.value('keywords', s(x=1))
report.value('nothing', s())
report.value('argument and keyword', s(1, y=2))
report.value('rngs', s(1, rngs=nnx.Rngs(0)))
report.value('layers', len(s.layers))
