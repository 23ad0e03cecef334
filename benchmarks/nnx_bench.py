"""Overhead of flax.nnx relative to raw JAX (ratios, not timed tests).

Run: python benchmarks/nnx_bench.py
"""

import subprocess
import sys
import timeit

import jax
import jax.numpy as jnp
import optax

from flax import nnx


def best(fn, number=200, repeat=5):
  fn()
  return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


class Linear(nnx.Module):
  def __init__(self, din, dout, rngs):
    self.kernel = nnx.Param(jax.random.normal(rngs.params(), (din, dout)) * 0.1)
    self.bias = nnx.Param(jnp.zeros(dout))

  def __call__(self, x):
    return x @ self.kernel + self.bias


class MLP(nnx.Module):
  def __init__(self, rngs):
    self.l1 = Linear(32, 64, rngs)
    self.l2 = Linear(64, 64, rngs)
    self.l3 = Linear(64, 10, rngs)

  def __call__(self, x):
    x = jax.nn.relu(self.l1(x))
    x = jax.nn.relu(self.l2(x))
    return self.l3(x)


def train_step_ratio(graph):
  model = MLP(nnx.Rngs(0))
  tx = optax.adam(1e-3)
  opt_state = tx.init(nnx.state(model, nnx.Param))
  holder = {'opt': opt_state}
  x = jnp.ones((16, 32))
  y = jnp.ones((16, 10))

  @nnx.jit(graph=graph)
  def step(model, opt_state, x, y):
    def loss(m):
      return jnp.mean((m(x) - y) ** 2)

    grads = nnx.grad(loss, graph=graph)(model)
    params = nnx.state(model, nnx.Param)
    if not graph:
      params = nnx.state(model, nnx.Param)
      grads = nnx.state(grads, nnx.Param)
    updates, opt_state = tx.update(grads, opt_state, params)
    nnx.update(model, optax.apply_updates(params, updates))
    return opt_state

  def run_nnx():
    holder['opt'] = step(model, holder['opt'], x, y)
    jax.block_until_ready(holder['opt'])

  params = nnx.state(model, nnx.Param).to_pure_dict()
  raw_state = {'p': params, 'o': tx.init(params)}

  def raw_loss(p, x, y):
    h = jax.nn.relu(x @ p['l1']['kernel'] + p['l1']['bias'])
    h = jax.nn.relu(h @ p['l2']['kernel'] + p['l2']['bias'])
    out = h @ p['l3']['kernel'] + p['l3']['bias']
    return jnp.mean((out - y) ** 2)

  @jax.jit
  def raw_step(p, o, x, y):
    g = jax.grad(raw_loss)(p, x, y)
    u, o = tx.update(g, o, p)
    return optax.apply_updates(p, u), o

  def run_raw():
    raw_state['p'], raw_state['o'] = raw_step(
      raw_state['p'], raw_state['o'], x, y
    )
    jax.block_until_ready(raw_state['o'])

  return best(run_nnx) / best(run_raw)


class Leaf(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.zeros(()))
    self.b = nnx.Param(jnp.zeros(()))


class Wide(nnx.Module):
  def __init__(self, n):
    for i in range(n):
      setattr(self, f'm{i}', Leaf())


def split_merge_ratios():
  model = Wide(1000)  # 2000 Variables
  tree = {
    f'm{i}': {'a': jnp.zeros(()), 'b': jnp.zeros(())} for i in range(1000)
  }
  base = best(lambda: jax.tree_util.tree_flatten(tree), number=50)
  g, s = nnx.split(model)
  out = {
    'split': best(lambda: nnx.split(model), number=50),
    'state': best(lambda: nnx.state(model), number=50),
    'merge': best(lambda: nnx.merge(g, s), number=50),
    'update': best(lambda: nnx.update(model, s), number=50),
  }
  return {k: v / base for k, v in out.items()}


def eval_shape_ratio():
  def raw_init():
    key = jax.random.key(0)
    return {
      'l1': jax.random.normal(key, (32, 64)),
      'l2': jax.random.normal(key, (64, 64)),
      'l3': jax.random.normal(key, (64, 10)),
    }

  a = best(lambda: nnx.eval_shape(lambda: MLP(nnx.Rngs(0))), number=20)
  b = best(lambda: jax.eval_shape(raw_init), number=20)
  return a / b


def import_ratio():
  def t(stmt):
    code = (
      f'import time; t=time.perf_counter(); {stmt}; '
      'print(time.perf_counter()-t)'
    )
    runs = [
      float(subprocess.check_output([sys.executable, '-c', code]))
      for _ in range(3)
    ]
    return min(runs)

  return t('from flax import nnx') / t('import jax')


def main():
  print(f'train step (graph mode)   : {train_step_ratio(True):.2f}x raw jax')
  print(f'train step (tree mode)    : {train_step_ratio(False):.2f}x raw jax')
  for k, v in split_merge_ratios().items():
    print(f'{k:6s} 2000 Variables     : {v:.2f}x tree_flatten')
  print(f'eval_shape(Model(...))    : {eval_shape_ratio():.2f}x jax.eval_shape')
  print(f'from flax import nnx      : {import_ratio():.2f}x import jax')


if __name__ == '__main__':
  main()
