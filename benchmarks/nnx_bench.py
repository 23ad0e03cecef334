"""Overhead of flax.nnx relative to raw JAX (ratios, not timed tests).

Run: python benchmarks/nnx_bench.py [name ...]

Each ratio is the median over several rounds; in each round the NNX and the
raw JAX versions run back to back (best of a few repeats each), so load on
a shared machine affects both sides of a ratio alike.
"""

import statistics
import subprocess
import sys
import timeit

import jax
import jax.numpy as jnp
import optax

from flax import nnx


ROUNDS = 7


def best(fn, number=200, repeat=3):
  return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def paired(fns, base, number, rounds=ROUNDS):
  """Median over rounds of ``time(fn) / time(base)`` for each of ``fns``.

  Returns ``({name: ratio}, base seconds per call)``.
  """
  base()
  for fn in fns.values():
    fn()
  ratios = {k: [] for k in fns}
  bases = []
  for _ in range(rounds):
    b = best(base, number)
    bases.append(b)
    for k, fn in fns.items():
      ratios[k].append(best(fn, number) / b)
  return (
    {k: statistics.median(v) for k, v in ratios.items()},
    statistics.median(bases),
  )


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

  ratios, base = paired({'nnx': run_nnx}, run_raw, number=100)
  return ratios['nnx'], base


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
  g, s = nnx.split(model)
  fns = {
    'split': lambda: nnx.split(model),
    'state': lambda: nnx.state(model),
    'merge': lambda: nnx.merge(g, s),
    'update': lambda: nnx.update(model, s),
  }
  return paired(fns, lambda: jax.tree_util.tree_flatten(tree), number=20)


def eval_shape_ratio():
  # The raw side does the same work as MLP(nnx.Rngs(0)): a key, one
  # fold_in per parameter draw, scaled normal kernels and zero biases; both
  # sides get a fresh function each call so neither hits JAX's trace cache.
  def raw_init():
    key = jax.random.key(0)
    count = jnp.zeros((), jnp.uint32)
    params = {}
    for name, din, dout in (('l1', 32, 64), ('l2', 64, 64), ('l3', 64, 10)):
      k = jax.random.fold_in(key, count)
      count = count + 1
      params[name] = {
        'kernel': jax.random.normal(k, (din, dout)) * 0.1,
        'bias': jnp.zeros(dout),
      }
    return params

  ratios, base = paired(
    {'nnx': lambda: nnx.eval_shape(lambda: MLP(nnx.Rngs(0)))},
    lambda: jax.eval_shape(lambda: raw_init()),
    number=10,
  )
  return ratios['nnx'], base


def import_ratio():
  def t(stmt):
    code = (
      f'import time; t=time.perf_counter(); {stmt}; '
      'print(time.perf_counter()-t)'
    )
    return float(subprocess.check_output([sys.executable, '-c', code]))

  ratios = []
  for _ in range(ROUNDS):
    ratios.append(t('from flax import nnx') / t('import jax'))
  return statistics.median(ratios), None


def main(argv):
  only = set(argv)

  def want(name):
    return not only or name in only

  def show(label, ratio, base, unit='raw jax'):
    extra = f'  (raw: {base * 1e6:.0f} us)' if base else ''
    print(f'{label:26s}: {ratio:.2f}x {unit}{extra}', flush=True)

  if want('train'):
    show('train step (graph mode)', *train_step_ratio(True))
    show('train step (tree mode)', *train_step_ratio(False))
  if want('split'):
    ratios, base = split_merge_ratios()
    for k, v in ratios.items():
      show(f'{k} 2000 Variables', v, base, 'tree_flatten')
  if want('eval_shape'):
    show('eval_shape(Model(...))', *eval_shape_ratio(), 'jax.eval_shape')
  if want('import'):
    show('from flax import nnx', *import_ratio(), 'import jax')


if __name__ == '__main__':
  main(sys.argv[1:])
