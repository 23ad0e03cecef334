"""NNX LSTMCell/GRUCell and nnx.RNN over a sequence."""

import jax.numpy as jnp
import report
from flax import nnx

x = jnp.linspace(0, 1, 2 * 5 * 3).reshape(2, 5, 3)
for name, cls in (('lstm', nnx.LSTMCell), ('gru', nnx.GRUCell)):
  cell = cls(3, 4, rngs=nnx.Rngs(0))
  report.tree(f'{name}-state', nnx.state(cell))
  carry = cell.initialize_carry((2, 3), rngs=nnx.Rngs(1))
  report.tree(f'{name}-carry', carry)
  rnn = nnx.RNN(cell)
  report.array(f'{name}-out', rnn(x))
