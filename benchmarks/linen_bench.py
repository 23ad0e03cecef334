"""Linen train steps vs the same steps written in raw JAX over a params dict.

Tiny MLP (in 32, hidden 64 x2, out 10, batch 16) and a compute-bound MLP,
both trained with Adam from optax under ``jax.jit``.
"""

import os
import sys

import jax
import jax.numpy as jnp
import optax

sys.path.insert(0, os.path.dirname(__file__))
from _timing import per_call_pair, report  # noqa: E402

from flax import linen as nn  # noqa: E402


class MLP(nn.Module):
  hidden: int
  depth: int
  out: int

  @nn.compact
  def __call__(self, x):
    for _ in range(self.depth):
      x = nn.relu(nn.Dense(self.hidden)(x))
    return nn.Dense(self.out)(x)


def raw_init(key, sizes):
  params = {}
  for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
    key, sub = jax.random.split(key)
    params[f'Dense_{i}'] = {
      'kernel': jax.random.normal(sub, (a, b)) / jnp.sqrt(a),
      'bias': jnp.zeros((b,)),
    }
  return params


def raw_apply(params, x):
  n = len(params)
  for i in range(n):
    layer = params[f'Dense_{i}']
    x = x @ layer['kernel'] + layer['bias']
    if i < n - 1:
      x = jax.nn.relu(x)
  return x


def make_step(apply_fn, tx):
  def loss_fn(params, x, y):
    logits = apply_fn(params, x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

  @jax.jit
  def step(params, opt_state, x, y):
    grads = jax.grad(loss_fn)(params, x, y)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, x, y

  return step


def compare(name, features, hidden, depth, out, batch, target, number):
  key = jax.random.key(0)
  x = jax.random.normal(key, (batch, features))
  y = jax.random.randint(key, (batch,), 0, out)
  tx = optax.adam(1e-3)

  model = MLP(hidden, depth, out)
  variables = model.init(key, x)
  flax_step = make_step(lambda p, x: model.apply({'params': p}, x), tx)
  params = variables['params']
  raw_params = raw_init(key, [features] + [hidden] * depth + [out])
  raw_step = make_step(raw_apply, tx)
  flax_t, raw_t = per_call_pair(
    flax_step,
    (params, tx.init(params), x, y),
    raw_step,
    (raw_params, tx.init(raw_params), x, y),
    number=number,
  )
  return report(name, flax_t, raw_t, target)


def main():
  compare('linen tiny-MLP train step', 32, 64, 2, 10, 16, 1.1, 500)
  compare(
    'linen compute-bound MLP train step', 512, 2048, 2, 512, 512, 1.02, 10
  )


if __name__ == '__main__':
  main()
