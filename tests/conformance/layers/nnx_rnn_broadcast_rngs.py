"""nnx.RNN state_axes and broadcast_rngs: per-step keys, stream counts,
broadcast state, seq_lengths with return_carry, unroll."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class DropCell(nnx.RNNCellBase):
  def __init__(self, din, dh, *, rngs):
    self.lin = nnx.Linear(din, dh, rngs=rngs)
    self.drop = nnx.Dropout(0.5, rngs=rngs)
    self.hidden_features = dh
    self.count = nnx.BatchStat(jnp.array(0))

  @property
  def num_feature_axes(self):
    return 1

  def __call__(self, carry, x):
    self.count[...] += 1
    h = self.drop(self.lin(x)) + carry
    return h, h

  def initialize_carry(self, input_shape, rngs=None):
    return jnp.zeros(input_shape[:-1] + (self.hidden_features,))


class KeyCell(DropCell):
  def __call__(self, carry, x):
    key = jax.random.key_data(self.drop.rngs())
    return carry, jnp.broadcast_to(key, x.shape[:-1] + (2,))


cases = {
  'default': {},
  'bcast-dropout': dict(broadcast_rngs='dropout'),
  'bcast-rngstate-unroll': dict(broadcast_rngs=nnx.RngState, unroll=2),
  'axes-stat-none': dict(
    state_axes=nnx.StateAxes({nnx.BatchStat: None, ...: nnx.Carry})
  ),
  'axes-dropout-none': dict(
    state_axes=nnx.StateAxes({'dropout': None, ...: nnx.Carry})
  ),
  'axes-dict': dict(state_axes={...: nnx.Carry}),
  'axes-and-bcast': dict(
    state_axes=nnx.StateAxes({nnx.BatchStat: None, ...: nnx.Carry}),
    broadcast_rngs='dropout',
  ),
}
for name, kwargs in cases.items():
  cell = DropCell(2, 3, rngs=nnx.Rngs(0, dropout=1))
  rnn = nnx.RNN(cell, **kwargs)
  report.array(f'{name}-y', rnn(jnp.ones((1, 4, 2))))
  report.value(
    f'{name}-counts', [int(cell.count[...]), int(cell.drop.rngs.count[...])]
  )
  out = rnn(
    jnp.ones((2, 3, 2)), seq_lengths=jnp.array([1, 3]), return_carry=True
  )
  report.tree(f'{name}-carry-out', out)
  report.value(
    f'{name}-counts-2', [int(cell.count[...]), int(cell.drop.rngs.count[...])]
  )
  keys = KeyCell(2, 3, rngs=nnx.Rngs(0, dropout=1))
  report.array(
    f'{name}-keys', nnx.RNN(keys, **kwargs)(jnp.ones((1, 3, 2))), exact=True
  )

rnn = nnx.RNN(DropCell(2, 3, rngs=nnx.Rngs(0)), broadcast_rngs='dropout')
report.value('bcast-attr', rnn.broadcast_rngs)
report.value(
  'default-axes',
  str(type(nnx.RNN(DropCell(2, 3, rngs=nnx.Rngs(0))).state_axes).__name__),
)
