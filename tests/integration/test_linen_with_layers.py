"""flax.linen Module system together with the flax-layers layer zoo."""

import re
import jax
import jax.numpy as jnp
import numpy as np
import optax

from flax import linen as nn


class MLP(nn.Module):
  features: tuple = (8, 2)

  @nn.compact
  def __call__(self, x, train: bool = False):
    for f in self.features[:-1]:
      x = nn.relu(nn.Dense(f)(x))
      x = nn.Dropout(0.5, deterministic=not train)(x)
    return nn.Dense(self.features[-1])(x)


def test_dense_mlp_numerics_and_train_step():
  x = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)
  y = jnp.ones((4, 2))
  model = MLP()
  params = model.init(jax.random.key(0), x)['params']
  assert jax.tree_util.tree_map(jnp.shape, params) == {
    'Dense_0': {'bias': (8,), 'kernel': (3, 8)},
    'Dense_1': {'bias': (2,), 'kernel': (8, 2)},
  }

  def plain(p, x):
    h = jax.nn.relu(x @ p['Dense_0']['kernel'] + p['Dense_0']['bias'][None])
    return h @ p['Dense_1']['kernel'] + p['Dense_1']['bias'][None]

  np.testing.assert_allclose(
    model.apply({'params': params}, x), plain(params, x), rtol=1e-6
  )
  tx = optax.sgd(0.1)

  @jax.jit
  def step(params, opt_state):
    def loss(p):
      return jnp.mean((model.apply({'params': p}, x) - y) ** 2)

    grads = jax.grad(loss)(params)
    updates, opt_state = tx.update(grads, opt_state)
    return optax.apply_updates(params, updates), opt_state

  new_params, _ = step(params, tx.init(params))
  grads = jax.grad(lambda p: jnp.mean((plain(p, x) - y) ** 2))(params)
  expected = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
  jax.tree_util.tree_map(
    lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7),
    new_params,
    expected,
  )


def test_dropout_needs_rng_in_train_mode():
  x = jnp.ones((2, 3))
  v = MLP().init(jax.random.key(0), x)
  a = MLP().apply(v, x, train=True, rngs={'dropout': jax.random.key(1)})
  b = MLP().apply(v, x, train=True, rngs={'dropout': jax.random.key(2)})
  assert not np.allclose(a, b)


def test_batchnorm_in_vmap_and_scan_of_dense():
  class Block(nn.Module):
    @nn.compact
    def __call__(self, x, _):
      return nn.relu(nn.Dense(4)(x)), None

  class Stack(nn.Module):
    @nn.compact
    def __call__(self, x):
      x = nn.Dense(4)(x)
      x, _ = nn.scan(
        Block,
        length=3,
        variable_axes={'params': 0},
        split_rngs={'params': True},
      )()(x, None)
      return nn.BatchNorm(use_running_average=False)(x)

  x = jnp.ones((5, 2))
  v = Stack().init(jax.random.key(0), x)
  shapes = jax.tree_util.tree_map(jnp.shape, v)
  assert shapes['params']['ScanBlock_0']['Dense_0']['kernel'] == (3, 4, 4)
  assert shapes['batch_stats']['BatchNorm_0'] == {'mean': (4,), 'var': (4,)}
  _, updates = Stack().apply(v, x, mutable=['batch_stats'])
  assert set(updates) == {'batch_stats'}


def test_tabulate_with_dense():
  text = MLP().tabulate(
    jax.random.key(0), jnp.ones((16, 3)), console_kwargs={'width': 120}
  )
  plain = re.sub(r'\x1b\[[0-9;]*m', '', text)  # the table is styled
  assert 'Dense_0' in plain and 'Dropout_0' in plain
  assert 'Total Parameters: 50 (200 B)' in plain


def test_sequential_of_dense_layers():
  model = nn.Sequential([nn.Dense(4), nn.relu, nn.Dense(1)])
  v = model.init(jax.random.key(0), jnp.ones((1, 3)))
  assert sorted(v['params']) == ['layers_0', 'layers_2']
