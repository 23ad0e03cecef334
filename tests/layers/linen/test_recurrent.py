"""Linen RNN cells, RNN and Bidirectional against NumPy recurrences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import linen as nn

KEY = jax.random.key(0)


def shapes(tree):
  return jax.tree_util.tree_map(jnp.shape, tree)


def _sig(x):
  return 1 / (1 + np.exp(-x))


def _lstm_step(p, c, h, x):
  def gate(n):
    y = x @ p[f'i{n}']['kernel'] + h @ p[f'h{n}']['kernel']
    return y + p[f'h{n}']['bias']

  i, f, g, o = (
    _sig(gate('i')),
    _sig(gate('f')),
    np.tanh(gate('g')),
    _sig(gate('o')),
  )
  c = f * c + i * g
  return c, o * np.tanh(c)


def _np_params(v):
  return jax.tree_util.tree_map(np.asarray, v['params'])


@pytest.mark.parametrize('cls', [nn.LSTMCell, nn.OptimizedLSTMCell])
def test_lstm_cells(cls):
  x = jax.random.normal(KEY, (2, 3))
  cell = cls(features=4, bias_init=nn.initializers.normal(0.5))
  carry = cell.initialize_carry(jax.random.key(1), x.shape)
  assert shapes(carry) == ((2, 4), (2, 4))
  v = cell.init(KEY, carry, x)
  expected = {}
  for g in 'ifgo':
    expected[f'i{g}'] = {'kernel': (3, 4)}
    expected[f'h{g}'] = {'kernel': (4, 4), 'bias': (4,)}
  assert shapes(v['params']) == expected
  c0 = np.asarray(jax.random.normal(jax.random.key(2), (2, 4)))
  h0 = np.asarray(jax.random.normal(jax.random.key(3), (2, 4)))
  (c, h), out = cell.apply(v, (c0, h0), x)
  rc, rh = _lstm_step(_np_params(v), c0, h0, np.asarray(x))
  np.testing.assert_allclose(c, rc, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(h, rh, rtol=1e-4, atol=1e-5)
  np.testing.assert_array_equal(out, h)


def test_lstm_and_optimized_share_checkpoints():
  x = jax.random.normal(KEY, (2, 3))
  cell = nn.LSTMCell(4)
  carry = cell.initialize_carry(KEY, x.shape)
  v = cell.init(KEY, carry, x)
  a = cell.apply(v, carry, x)
  b = nn.OptimizedLSTMCell(4).apply(v, carry, x)
  np.testing.assert_allclose(a[1], b[1], rtol=1e-5, atol=1e-6)
  v2 = nn.OptimizedLSTMCell(4).init(KEY, carry, x)
  jax.tree_util.tree_map(np.testing.assert_array_equal, v, v2)


def test_gru_cell():
  x = jax.random.normal(KEY, (2, 3))
  cell = nn.GRUCell(4, bias_init=nn.initializers.normal(0.5))
  h0 = np.asarray(jax.random.normal(jax.random.key(2), (2, 4)))
  v = cell.init(KEY, h0, x)
  assert shapes(v['params']) == {
    'ir': {'kernel': (3, 4), 'bias': (4,)},
    'hr': {'kernel': (4, 4)},
    'iz': {'kernel': (3, 4), 'bias': (4,)},
    'hz': {'kernel': (4, 4)},
    'in': {'kernel': (3, 4), 'bias': (4,)},
    'hn': {'kernel': (4, 4), 'bias': (4,)},
  }
  p, xn = _np_params(v), np.asarray(x)

  def lin(n, inp):
    y = inp @ p[n]['kernel']
    return y + p[n]['bias'] if 'bias' in p[n] else y

  r = _sig(lin('ir', xn) + lin('hr', h0))
  z = _sig(lin('iz', xn) + lin('hz', h0))
  n = np.tanh(lin('in', xn) + r * lin('hn', h0))
  h, out = cell.apply(v, h0, x)
  np.testing.assert_allclose(h, (1 - z) * n + z * h0, rtol=1e-4, atol=1e-5)
  assert cell.initialize_carry(KEY, (5, 2, 3)).shape == (5, 2, 4)


def test_mgu_and_simple_cells():
  x = jax.random.normal(KEY, (2, 3))
  h0 = jnp.zeros((2, 4))
  v = nn.MGUCell(4).init(KEY, h0, x)
  assert shapes(v['params']) == {
    'if': {'kernel': (3, 4), 'bias': (4,)},
    'hf': {'kernel': (4, 4)},
    'in': {'kernel': (3, 4), 'bias': (4,)},
    'hn': {'kernel': (4, 4), 'bias': (4,)},
  }
  np.testing.assert_array_equal(v['params']['if']['bias'], 1.0)
  p, xn = _np_params(v), np.asarray(x)
  f = _sig(xn @ p['if']['kernel'] + 1.0)
  n = np.tanh(xn @ p['in']['kernel'])
  h, _ = nn.MGUCell(4).apply(v, h0, x)
  np.testing.assert_allclose(h, (1 - f) * n, rtol=1e-4, atol=1e-5)

  v = nn.SimpleCell(4).init(KEY, h0, x)
  assert shapes(v['params']) == {
    'i': {'kernel': (3, 4), 'bias': (4,)},
    'h': {'kernel': (4, 4)},
  }
  h1 = jnp.ones((2, 4))
  h, _ = nn.SimpleCell(4, residual=True).apply(v, h1, x)
  p = _np_params(v)
  ref = np.tanh(xn @ p['i']['kernel'] + np.ones((2, 4)) @ p['h']['kernel'] + 1)
  np.testing.assert_allclose(h, ref, rtol=1e-4, atol=1e-5)


def test_conv_lstm_cell():
  x = jnp.ones((2, 5, 5, 3))
  cell = nn.ConvLSTMCell(features=4, kernel_size=(3, 3))
  carry = cell.initialize_carry(KEY, x.shape)
  assert shapes(carry) == ((2, 5, 5, 4), (2, 5, 5, 4))
  v = cell.init(KEY, carry, x)
  assert shapes(v['params']) == {
    'ih': {'kernel': (3, 3, 3, 16), 'bias': (16,)},
    'hh': {'kernel': (3, 3, 4, 16), 'bias': (16,)},
  }
  (c, h), out = cell.apply(v, carry, x)
  assert h.shape == (2, 5, 5, 4)


def test_features_required_and_carry_init():
  with pytest.raises(TypeError):
    nn.LSTMCell()
  cell = nn.LSTMCell(5, carry_init=nn.initializers.ones)
  c, h = cell.initialize_carry(KEY, (3, 2))
  np.testing.assert_array_equal(c, np.ones((3, 5)))
  np.testing.assert_array_equal(h, np.ones((3, 5)))
  g = nn.GRUCell(4).initialize_carry(KEY, (2, 7, 3))
  assert g.shape == (2, 7, 4) and g.dtype == jnp.float32


def test_rnn_matches_loop():
  x = jax.random.normal(KEY, (2, 5, 3))
  rnn = nn.RNN(nn.LSTMCell(4), return_carry=True)
  v = rnn.init(KEY, x)
  assert set(v['params']) == {'cell'}
  assert shapes(v['params']['cell']['ii']) == {'kernel': (3, 4)}
  (c, h), y = rnn.apply(v, x)
  assert y.shape == (2, 5, 4)
  p = jax.tree_util.tree_map(np.asarray, v['params']['cell'])
  rc = rh = np.zeros((2, 4))
  outs = []
  for t in range(5):
    rc, rh = _lstm_step(p, rc, rh, np.asarray(x[:, t]))
    outs.append(rh)
  np.testing.assert_allclose(y, np.stack(outs, 1), rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(h, rh, rtol=1e-4, atol=1e-5)
  y_tm = nn.RNN(nn.LSTMCell(4), time_major=True).apply(v, jnp.swapaxes(x, 0, 1))
  np.testing.assert_allclose(jnp.swapaxes(y_tm, 0, 1), y, rtol=1e-5, atol=1e-6)


def test_rnn_seq_lengths_reverse():
  x = jax.random.normal(KEY, (2, 4, 3))
  rnn = nn.RNN(nn.SimpleCell(3))
  v = rnn.init(KEY, x)
  lengths = jnp.array([2, 4])
  carry, y = rnn.apply(v, x, seq_lengths=lengths, return_carry=True)
  np.testing.assert_allclose(carry[0], y[0, 1], rtol=1e-6)
  np.testing.assert_allclose(carry[1], y[1, 3], rtol=1e-6)
  # reverse + keep_order: the first valid output of sequence 0 saw x[0, 1]
  # then x[0, 0].
  y_rev = rnn.apply(v, x, seq_lengths=lengths, reverse=True, keep_order=True)
  manual = rnn.apply(v, x[:1, 1::-1])
  np.testing.assert_allclose(y_rev[0, 0], manual[0, 1], rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(y_rev[0, 1], manual[0, 0], rtol=1e-5, atol=1e-6)


def test_bidirectional():
  x = jax.random.normal(KEY, (2, 4, 3))
  bi = nn.Bidirectional(
    nn.RNN(nn.GRUCell(5)), nn.RNN(nn.GRUCell(6)), return_carry=True
  )
  v = bi.init(KEY, x)
  assert set(v['params']) == {'forward_rnn', 'backward_rnn'}
  assert set(v['params']['forward_rnn']) == {'cell'}
  (cf, cb), y = bi.apply(v, x)
  assert y.shape == (2, 4, 11) and cf.shape == (2, 5) and cb.shape == (2, 6)
  fwd = nn.RNN(nn.GRUCell(5)).apply({'params': v['params']['forward_rnn']}, x)
  np.testing.assert_allclose(y[..., :5], fwd, rtol=1e-5, atol=1e-6)
  bwd = nn.RNN(nn.GRUCell(6)).apply(
    {'params': v['params']['backward_rnn']}, x[:, ::-1]
  )
  np.testing.assert_allclose(y[..., 5:], bwd[:, ::-1], rtol=1e-5, atol=1e-6)
