"""nnx.reseed: keys drawn from Rngs(**seeds), policies for split streams."""

import jax
import report
from flax import nnx


def keys(stream):
  return jax.random.key_data(stream.key[...])


rngs = nnx.Rngs(0, params=1)
rngs.params()
nnx.reseed(rngs, params=5)
report.array('params-key', keys(rngs.params))
report.array('params-count', rngs.params.count[...])
report.array('default-untouched', keys(rngs.default))

split = nnx.Rngs(0, params=1).split(3)
with report.raises('non-scalar key'):
  nnx.reseed(split, params=5)
nnx.reseed(split, params=5, policy='match_shape')
report.array('match_shape', keys(split.params))
report.array('match_shape-count', split.params.count[...])

seen = []


def policy(path, key, shape):
  seen.append((path, tuple(key.shape), shape))
  return jax.random.split(key, shape)


nnx.reseed(split, params=7, policy=policy)
report.value('policy-args', [[list(p), list(k), list(s)] for p, k, s in seen])
report.array('policy-keys', keys(split.params))
with report.raises('bad policy'):
  nnx.reseed(split, params=5, policy='bad')


class Model(nnx.Module):
  def __init__(self, rngs):
    self.rngs = rngs
    self.drop = nnx.Dropout(0.5, rngs=rngs)


m = Model(nnx.Rngs(0, dropout=1))
nnx.reseed(m, dropout=3, default=4)
report.array('model-dropout', keys(m.rngs.dropout))
report.array('model-default', keys(m.rngs.default))
report.array('dropout-layer-stream', keys(m.drop.rngs))
m.drop.deterministic = False
report.array('mask', m.drop(jax.numpy.ones((8,))))
