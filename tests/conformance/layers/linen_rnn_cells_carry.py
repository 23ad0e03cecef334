"""Linen RNN cells: features required, initialize_carry(rng, input_shape)
with carry_init, parameter trees and one step."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

x = jnp.linspace(-1, 1, 6).reshape(2, 3)
for cls in (
  nn.LSTMCell,
  nn.OptimizedLSTMCell,
  nn.GRUCell,
  nn.MGUCell,
  nn.SimpleCell,
):
  name = cls.__name__
  with report.raises(f'{name}-no-features'):
    cls()
  cell = cls(4, carry_init=nn.initializers.normal(0.5))
  carry = cell.initialize_carry(jax.random.key(1), x.shape)
  report.tree(f'{name}-carry', carry)
  v = cell.init(jax.random.key(0), carry, x)
  report.tree(f'{name}-params', v)
  report.tree(f'{name}-step', cell.apply(v, carry, x))
conv = nn.ConvLSTMCell(3, (2, 2))
report.tree(
  'conv-carry', conv.initialize_carry(jax.random.key(0), (1, 4, 4, 2))
)
report.text('lstm-repr', repr(nn.LSTMCell(4)))
