"""RngStream/Rngs split, broadcast and the deprecated fork(split=)."""

import jax
import report
from flax import nnx


def keys(stream):
  return jax.random.key_data(stream.key[...])


rngs = nnx.Rngs(0, params=1)
s = rngs.params.broadcast(3)
report.array('broadcast-keys', keys(s))
report.array('broadcast-count', s.count[...])
report.value('source-count', int(rngs.params.count[...]))
b = rngs.broadcast({'params': 2, ...: (2, 3)})
report.value(
  'broadcast-shapes', {k: list(v.key.shape) for k, v in sorted(b.items())}
)
report.array('broadcast-default', keys(b.default))
sp = rngs.split({'params': 2})
report.value(
  'split-shapes', {k: list(v.key.shape) for k, v in sorted(sp.items())}
)
report.array('split-params', keys(sp.params))
report.array('split-default', keys(sp.default))
s2 = rngs.params.split((2, 2))
report.array('stream-split', keys(s2))
with report.warns('fork split deprecated'):
  f = rngs.params.fork(split=2)
report.array('fork-split-keys', keys(f))
with report.warns('rngs fork split deprecated'):
  rngs.fork(split=2)
report.array('fork-plain', keys(rngs.fork().params))
