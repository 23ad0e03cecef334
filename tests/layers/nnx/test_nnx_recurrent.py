"""Recurrent cells, RNN and Bidirectional."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nnx_layer_helpers import assert_close
from nnx_layer_helpers import param_key
from nnx_layer_helpers import shapes


def _sig(x):
  return 1 / (1 + np.exp(-x))


def _lin(m, x):
  y = np.asarray(x, np.float64) @ np.asarray(m.kernel[...], np.float64)
  if m.bias is not None:
    y = y + np.asarray(m.bias[...])
  return y


def test_lstm_cell_state_and_keys():
  cell = nnx.LSTMCell(3, 4, rngs=nnx.Rngs(0))
  s = shapes(cell)
  for gate in ('ii', 'if_', 'ig', 'io'):
    assert s[f'{gate}/kernel'] == ((3, 4), 'float32')
    assert f'{gate}/bias' not in s
  for gate in ('hi', 'hf', 'hg', 'ho'):
    assert s[f'{gate}/kernel'] == ((4, 4), 'float32')
    assert s[f'{gate}/bias'] == ((4,), 'float32')
  init = jax.nn.initializers.lecun_normal()
  assert_close(cell.if_.kernel[...], init(param_key(0, 1), (3, 4)), 0, 0)
  orth = jax.nn.initializers.orthogonal()
  assert_close(cell.hi.kernel[...], orth(param_key(0, 4), (4, 4)), 0, 0)


def test_lstm_cell_numerics():
  cell = nnx.LSTMCell(
    3, 4, bias_init=nnx.initializers.normal(1.0), rngs=nnx.Rngs(0)
  )
  c, h = cell.initialize_carry((2, 3), rngs=nnx.Rngs(0))
  assert c.shape == h.shape == (2, 4)
  c = jax.random.normal(jax.random.key(1), (2, 4))
  h = jax.random.normal(jax.random.key(2), (2, 4))
  x = jax.random.normal(jax.random.key(3), (2, 3))
  (nc, nh), y = cell((c, h), x)
  i = _sig(_lin(cell.ii, x) + _lin(cell.hi, h))
  f = _sig(_lin(cell.if_, x) + _lin(cell.hf, h))
  g = np.tanh(_lin(cell.ig, x) + _lin(cell.hg, h))
  o = _sig(_lin(cell.io, x) + _lin(cell.ho, h))
  ec = f * np.asarray(c) + i * g
  assert_close(nc, ec)
  assert_close(nh, o * np.tanh(ec))
  assert_close(y, nh, 0, 0)


def test_optimized_lstm_cell():
  cell = nnx.OptimizedLSTMCell(3, 4, rngs=nnx.Rngs(0))
  assert shapes(cell) == {
    'dense_h/bias': ((16,), 'float32'),
    'dense_h/kernel': ((4, 16), 'float32'),
    'dense_i/kernel': ((3, 16), 'float32'),
  }
  c = jax.random.normal(jax.random.key(1), (2, 4))
  h = jax.random.normal(jax.random.key(2), (2, 4))
  x = jax.random.normal(jax.random.key(3), (2, 3))
  (nc, nh), _ = cell((c, h), x)
  z = _lin(cell.dense_i, x) + _lin(cell.dense_h, h)
  i, f, g, o = np.split(z, 4, axis=-1)
  ec = _sig(f) * np.asarray(c) + _sig(i) * np.tanh(g)
  assert_close(nc, ec)
  assert_close(nh, _sig(o) * np.tanh(ec))


def test_gru_cell():
  cell = nnx.GRUCell(3, 4, rngs=nnx.Rngs(0))
  assert shapes(cell) == {
    'dense_h/kernel': ((4, 12), 'float32'),
    'dense_i/bias': ((12,), 'float32'),
    'dense_i/kernel': ((3, 12), 'float32'),
  }
  h = jax.random.normal(jax.random.key(2), (2, 4))
  x = jax.random.normal(jax.random.key(3), (2, 3))
  nh, y = cell(h, x)
  xr, xz, xn = np.split(_lin(cell.dense_i, x), 3, axis=-1)
  hr, hz, hn = np.split(_lin(cell.dense_h, h), 3, axis=-1)
  r, z = _sig(xr + hr), _sig(xz + hz)
  n = np.tanh(xn + r * hn)
  assert_close(nh, (1 - z) * n + z * np.asarray(h))
  assert cell.initialize_carry((5, 3), rngs=nnx.Rngs(0)).shape == (5, 4)


def test_simple_cell():
  cell = nnx.SimpleCell(3, 4, residual=True, rngs=nnx.Rngs(0))
  assert shapes(cell) == {
    'dense_h/kernel': ((4, 4), 'float32'),
    'dense_i/bias': ((4,), 'float32'),
    'dense_i/kernel': ((3, 4), 'float32'),
  }
  h = jax.random.normal(jax.random.key(2), (2, 4))
  x = jax.random.normal(jax.random.key(3), (2, 3))
  nh, _ = cell(h, x)
  expected = np.tanh(
    _lin(cell.dense_i, x) + _lin(cell.dense_h, h) + np.asarray(h)
  )
  assert_close(nh, expected)


def _loop(cell, xs, carry):
  ys = []
  for t in range(xs.shape[1]):
    carry, y = cell(carry, xs[:, t])
    ys.append(y)
  return carry, jnp.stack(ys, axis=1)


def test_rnn_matches_python_loop():
  cell = nnx.LSTMCell(3, 4, rngs=nnx.Rngs(0))
  rnn = nnx.RNN(cell)
  # Besides the cell's params, the RNN holds its carry stream.
  assert set(shapes(rnn)) == {f'cell/{k}' for k in shapes(cell)} | {
    'rngs/count',
    'rngs/key',
  }
  xs = jax.random.normal(jax.random.key(0), (2, 5, 3))
  carry, ys = rnn(xs, return_carry=True)
  ec, eys = _loop(cell, xs, cell.initialize_carry((2, 3), rngs=nnx.Rngs(0)))
  assert_close(ys, eys)
  assert_close(carry[1], ec[1])
  # time_major input.
  tm = rnn(jnp.swapaxes(xs, 0, 1), time_major=True)
  assert_close(jnp.swapaxes(tm, 0, 1), eys)


def test_rnn_seq_lengths_and_reverse():
  cell = nnx.GRUCell(2, 3, rngs=nnx.Rngs(0))
  rnn = nnx.RNN(cell, return_carry=True)
  xs = jax.random.normal(jax.random.key(0), (2, 4, 2))
  lengths = jnp.array([2, 4])
  carry, ys = rnn(xs, seq_lengths=lengths)
  h0 = cell.initialize_carry((1, 2), rngs=nnx.Rngs(0))
  c_short, ys_short = _loop(cell, xs[:1, :2], h0)
  assert_close(carry[0], c_short[0])
  assert_close(ys[0, :2], ys_short[0])
  # reverse + keep_order: the valid part is processed right to left.
  _, rev = rnn(xs, seq_lengths=lengths, reverse=True, keep_order=True)
  _, ys_rev = _loop(cell, xs[:1, :2][:, ::-1], h0)
  assert_close(rev[0, :2], ys_rev[0, ::-1])


def test_rnn_initial_carry_and_bad_shape():
  cell = nnx.SimpleCell(2, 3, rngs=nnx.Rngs(0))
  rnn = nnx.RNN(cell)
  xs = jnp.ones((2, 4, 2))
  h0 = jnp.ones((2, 3))
  _, expected = _loop(cell, xs, h0)
  assert_close(rnn(xs, initial_carry=h0), expected)
  with pytest.raises(ValueError):
    rnn(jnp.ones((2,)))


def test_bidirectional():
  rngs = nnx.Rngs(0)
  fwd = nnx.RNN(nnx.GRUCell(2, 3, rngs=rngs))
  bwd = nnx.RNN(nnx.GRUCell(2, 3, rngs=rngs))
  layer = nnx.Bidirectional(fwd, bwd)
  s = shapes(layer)
  assert 'forward_rnn/cell/dense_i/kernel' in s
  assert 'backward_rnn/cell/dense_i/kernel' in s
  xs = jax.random.normal(jax.random.key(0), (2, 4, 2))
  (cf, cb), ys = layer(xs, return_carry=True)
  assert ys.shape == (2, 4, 6)
  assert_close(ys[..., :3], fwd(xs))
  assert_close(ys[..., 3:], jnp.flip(bwd(jnp.flip(xs, 1)), 1))


def test_rnn_under_jit_and_grad():
  model = nnx.RNN(nnx.LSTMCell(2, 3, rngs=nnx.Rngs(0)))
  xs = jnp.ones((1, 4, 2))

  @nnx.jit
  def loss(m, xs):
    return jnp.sum(m(xs))

  grads = nnx.grad(loss)(model, xs)
  assert grads['cell']['hi']['kernel'][...].shape == (3, 3)
  assert_close(loss(model, xs), jnp.sum(model(xs)))


def test_initialize_carry_needs_rngs_and_takes_carry_init():
  cell = nnx.LSTMCell(3, 2, rngs=nnx.Rngs(0))
  with pytest.raises(ValueError, match='RNGs must be provided'):
    cell.initialize_carry((1, 3))
  # Values of Flax 0.12.8: one key per array from the carry stream.
  c, h = cell.initialize_carry(
    (1, 3), rngs=nnx.Rngs(5), carry_init=nnx.initializers.normal()
  )
  assert_close(c, [[0.00415283, 0.01150387]])
  assert_close(h, [[-0.0137987, -0.0074144]])


def test_kept_rngs_and_rnn_carry_streams():
  init = nnx.initializers.normal()
  with pytest.warns(UserWarning, match='keep_rngs argument is deprecated'):
    with pytest.warns(UserWarning, match='carry_init is provided'):
      cell = nnx.SimpleCell(
        3, 2, carry_init=init, keep_rngs=True, rngs=nnx.Rngs(0)
      )
  # Flax 0.12.8 values: the kept rngs are a fork, drawn in turn.
  assert_close(cell.initialize_carry((1, 3)), [[-0.0057478, 0.00799837]])
  assert_close(cell.initialize_carry((1, 3)), [[-0.01257478, -0.00401604]])
  rnn = nnx.RNN(cell)
  x = jnp.ones((1, 2, 3))
  assert_close(rnn(x), [[[0.638932, 0.3440563], [0.15796821, -0.04589516]]])
  assert_close(
    rnn(x, rngs=nnx.Rngs(3)),
    [[[0.64074814, 0.33592275], [0.15553766, -0.03795659]]],
  )


def test_rnn_options_and_merge_fn():
  merged = nnx.Bidirectional.merge_fn(jnp.ones(2), jnp.zeros(2))
  assert_close(merged, [1.0, 1.0, 0.0, 0.0])


def test_bfloat16_cells():
  from flax.nnx.nn.recurrent import modified_orthogonal

  w = modified_orthogonal(jax.random.key(3), (4, 2), jnp.bfloat16)
  assert w.dtype == jnp.bfloat16
  cell = nnx.LSTMCell(3, 2, param_dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
  assert nnx.RNN(cell)(jnp.ones((1, 4, 3), jnp.bfloat16)).dtype == jnp.bfloat16
  cell = nnx.GRUCell(3, 2, dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
  assert nnx.RNN(cell)(jnp.ones((1, 4, 3), jnp.bfloat16)).dtype == jnp.float32
