"""nn.RNN: seq_lengths, reverse/keep_order, init_key; nn.Bidirectional."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

x = jnp.linspace(-1, 1, 2 * 5 * 3).reshape(2, 5, 3)
rnn = nn.RNN(nn.GRUCell(4, carry_init=nn.initializers.normal()))
v = rnn.init(jax.random.key(0), x)
report.text('repr', repr(rnn))
lengths = jnp.array([2, 5])
report.tree(
  'carry-outs', rnn.apply(v, x, seq_lengths=lengths, return_carry=True)
)
report.array(
  'reverse', rnn.apply(v, x, reverse=True, keep_order=True, seq_lengths=lengths)
)
report.array('init-key', rnn.apply(v, x, init_key=jax.random.key(3)))
report.array('time-major', rnn.apply(v, jnp.swapaxes(x, 0, 1), time_major=True))
bi = nn.Bidirectional(nn.RNN(nn.LSTMCell(2)), nn.RNN(nn.LSTMCell(2)))
bv = bi.init(jax.random.key(1), x)
report.tree('bi-params', bv)
report.tree(
  'bi-out', bi.apply(bv, x, return_carry=True, init_key=jax.random.key(2))
)
