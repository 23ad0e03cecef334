"""Rngs.fork / RngStream.fork / split keys, and their use inside nnx.jit."""

import jax
import report
from flax import nnx


def kd(k):
  return jax.random.key_data(k)


r = nnx.Rngs(0, params=1)
f = r.fork()
report.array('fork-default-key', kd(f.default.key[...]))
report.array('fork-params-key', kd(f.params.key[...]))
report.array('fork-counts', r.params.count[...])
with report.warns('fork-split-deprecated'):
  f2 = r.fork(split=3)
report.value('fork-split-shape', list(f2.params.key.shape))
report.array('fork-split-keys', kd(f2.params.key[...]))
s = r.params.fork()
report.text('stream-fork-type', type(s).__name__)
report.array('stream-fork-key', kd(s.key[...]))
report.array('stream-count-after', r.params.count[...])


@nnx.jit
def draw(r):
  return r.params(), r.default()


a, b = draw(r)
report.array('jit-a', kd(a))
report.array('jit-b', kd(b))
report.array('jit-count', r.params.count[...])
a2, _ = draw(r)
report.array('jit-a2', kd(a2))
