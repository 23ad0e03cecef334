"""Overhead of flax.nnx relative to raw JAX, side by side with Flax 0.12.8.

Run: python benchmarks/nnx_bench.py [--reference PYTHON] [--rounds N]
[case ...] with cases ``step``, ``graph``, ``eval_shape`` and ``import``.

Each case runs in a fresh worker process. A worker times every variant of
its case and a raw-JAX floor doing the same math, interleaved trial by
trial (each sample runs a variant many times and blocks once at the end,
as a training loop does), and reports per-trial ratios variant/floor, so
load on a shared machine affects both sides of a ratio alike. With a
reference interpreter (real Flax 0.12.8; by default the conformance
session's ``.nox/_reference-flax-0.12.8`` when it exists) the same worker
runs under both interpreters in turns, case by case, and the table shows
the project's and Flax's ratios from the same run: median [p10-p90].

The train step is what users run: an ``nnx.Optimizer`` (Adam) over a
small MLP, ``nnx.value_and_grad``, cross-entropy; its variants include a
step whose model structure is touched before every call (no cached
view), and the graph operations include ``split`` after such a change and
``merge``/``update`` into fresh objects.
"""

import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
REFERENCE = ROOT / '.nox' / '_reference-flax-0.12.8' / 'bin' / 'python'
CASES = ('step', 'graph', 'eval_shape', 'import')


# -- timing -------------------------------------------------------------------


def _calibrate(fn, target):
  """``k`` such that ``fn(k)`` takes about ``target`` seconds."""
  fn(1)
  fn(1)
  k = 1
  while True:
    start = time.perf_counter()
    fn(k)
    dt = time.perf_counter() - start
    if dt >= target / 4 or k >= 100_000:
      break
    k *= 4 if dt < target / 40 else 2
  return max(1, round(k * target / max(dt, 1e-9)))


def interleaved(fns, floors, trials, target):
  """Per-trial ratios ``time(fn) / time(floor)``, variants run in turns.

  Args:
    fns: ``{name: fn}``; ``fn(k)`` runs ``k`` iterations and blocks.
    floors: ``{name: floor name}`` for every variant that is not a floor.
    trials: number of samples per variant.
    target: seconds per sample.

  Returns:
    ``({name: [ratios]}, {floor: median seconds per iteration})``.
  """
  ks = {n: _calibrate(f, target) for n, f in fns.items()}
  names = list(fns)
  times = {n: [] for n in names}
  for t in range(trials):
    shift = t % len(names)
    for n in names[shift:] + names[:shift]:
      start = time.perf_counter()
      fns[n](ks[n])
      times[n].append((time.perf_counter() - start) / ks[n])
  ratios = {
    n: [a / b for a, b in zip(times[n], times[f])] for n, f in floors.items()
  }
  return ratios, {f: statistics.median(times[f]) for f in set(floors.values())}


# -- cases (run inside a worker) ------------------------------------------------


def _data():
  import jax
  import jax.numpy as jnp

  x = jax.random.normal(jax.random.PRNGKey(1), (16, 32), jnp.float32)
  y = jax.random.randint(jax.random.PRNGKey(2), (16,), 0, 10)
  return x, y


def _ce(logits, y):
  import optax

  return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def _mlp_class():
  import jax
  from flax import nnx

  class MLP(nnx.Module):
    def __init__(self, rngs):
      self.l0 = nnx.Linear(32, 64, rngs=rngs)
      self.l1 = nnx.Linear(64, 64, rngs=rngs)
      self.l2 = nnx.Linear(64, 10, rngs=rngs)

    def __call__(self, x):
      x = jax.nn.relu(self.l0(x))
      x = jax.nn.relu(self.l1(x))
      return self.l2(x)

  return MLP


def _step_fn(graph=None):
  from flax import nnx

  kw = {} if graph is None else {'graph': graph}

  def train_step(model, optimizer, x, y):
    def loss_fn(model):
      return _ce(model(x), y)

    loss, grads = nnx.value_and_grad(loss_fn, **kw)(model)
    optimizer.update(model, grads)
    return loss

  return train_step


def step_variants():
  """``{name: setup}``; ``setup()`` returns ``once() -> loss``."""
  import jax
  import numpy as np
  import optax
  from flax import nnx

  x, y = _data()
  MLP = _mlp_class()

  def fresh(graph=None):
    model = MLP(nnx.Rngs(0))
    kw = {} if graph is None else {'graph': graph}
    return model, nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param, **kw)

  def raw():
    model = MLP(nnx.Rngs(0))
    params = [
      {
        'kernel': np.asarray(layer.kernel[...]),
        'bias': np.asarray(layer.bias[...]),
      }
      for layer in (model.l0, model.l1, model.l2)
    ]
    tx = optax.adam(1e-3)

    @jax.jit
    def step(params, opt_state, x, y):
      def loss_fn(params):
        h = x
        for i, p in enumerate(params):
          h = h @ p['kernel'] + p['bias']
          if i < 2:
            h = jax.nn.relu(h)
        return _ce(h, y)

      loss, grads = jax.value_and_grad(loss_fn)(params)
      updates, opt_state = tx.update(grads, opt_state, params)
      return optax.apply_updates(params, updates), opt_state, loss

    box = [params, tx.init(params)]

    def once():
      box[0], box[1], loss = step(box[0], box[1], x, y)
      return loss

    return once

  def jit():
    model, opt = fresh()
    step = nnx.jit(_step_fn())
    return lambda: step(model, opt, x, y)

  def jit_touched():
    model, opt = fresh()
    step = nnx.jit(_step_fn())

    def once():
      model.l0 = model.l0  # a structural write: no cached view survives
      return step(model, opt, x, y)

    return once

  def jit_no_updates():
    model, opt = fresh()
    step = nnx.jit(_step_fn(), graph=True, graph_updates=False)
    return lambda: step(model, opt, x, y)

  def cached_partial():
    model, opt = fresh()
    step = nnx.cached_partial(nnx.jit(_step_fn()), model, opt)
    return lambda: step(x, y)

  def jit_tree():
    model, opt = fresh(graph=False)
    step = nnx.jit(_step_fn(graph=False), graph=False)
    return lambda: step(model, opt, x, y)

  def jit_partial_tree():
    model, opt = fresh(graph=False)
    step = nnx.jit_partial(_step_fn(graph=False), model, opt, graph=False)
    return lambda: step(x, y)

  def functional():
    model, opt = fresh()
    graphdef, state = nnx.split((model, opt))

    @jax.jit
    def fstep(state, x, y):
      model, opt = nnx.merge(graphdef, state)
      loss = _step_fn()(model, opt, x, y)
      return loss, nnx.state((model, opt))

    box = [state]

    def once():
      loss, box[0] = fstep(box[0], x, y)
      return loss

    return once

  return {
    'raw jax.jit + optax': raw,
    'nnx.jit': jit,
    'nnx.jit, structure touched each step': jit_touched,
    'nnx.jit(graph_updates=False)': jit_no_updates,
    'nnx.cached_partial(nnx.jit)': cached_partial,
    'nnx.jit(graph=False)': jit_tree,
    'nnx.jit_partial(graph=False)': jit_partial_tree,
    'split + jax.jit + merge': functional,
  }


def case_step():
  import jax

  fns, skipped = {}, {}
  for name, setup in step_variants().items():
    try:
      once = setup()
      jax.block_until_ready(once())
    except Exception as e:  # noqa: BLE001 - a missing feature is reported
      skipped[name] = f'{type(e).__name__}: {str(e).splitlines()[0][:120]}'
      continue

    def run(k, once=once):
      loss = None
      for _ in range(k):
        loss = once()
      jax.block_until_ready(loss)

    fns[name] = run
  floor = 'raw jax.jit + optax'
  floors = {n: floor for n in fns if n != floor}
  ratios, base = interleaved(fns, floors, trials=15, target=0.04)
  return ratios, {n: base[floor] for n in floors}, skipped


def case_graph():
  import jax
  import jax.numpy as jnp
  from flax import nnx

  class Block(nnx.Module):
    def __init__(self, rngs):
      for j in range(20):
        setattr(self, f'l{j}', nnx.Linear(2, 2, rngs=rngs))

  class Model(nnx.Module):
    def __init__(self, rngs):
      for i in range(50):
        setattr(self, f'b{i}', Block(rngs))

  model = Model(nnx.Rngs(0))  # 50 x 20 x (kernel, bias): 2000 Variables
  graphdef, state = nnx.split(model)
  raw = {
    f'b{i}': {
      f'l{j}': {'kernel': jnp.zeros((2, 2)), 'bias': jnp.zeros((2,))}
      for j in range(20)
    }
    for i in range(50)
  }
  leaves, treedef = jax.tree_util.tree_flatten(raw)

  def split_touched():
    model.b0 = model.b0
    return nnx.split(model)

  ops = {
    'tree_flatten_with_path': lambda: jax.tree_util.tree_flatten_with_path(raw),
    'tree_unflatten': lambda: jax.tree_util.tree_unflatten(treedef, leaves),
    'nnx.split': lambda: nnx.split(model),
    'nnx.split, structure touched': split_touched,
    'nnx.state': lambda: nnx.state(model),
    'nnx.merge (fresh objects)': lambda: nnx.merge(graphdef, state),
    'nnx.update': lambda: nnx.update(model, state),
  }
  floors = {
    'nnx.split': 'tree_flatten_with_path',
    'nnx.split, structure touched': 'tree_flatten_with_path',
    'nnx.state': 'tree_flatten_with_path',
    'nnx.merge (fresh objects)': 'tree_unflatten',
    'nnx.update': 'tree_unflatten',
  }

  def loop(op):
    def run(k):
      for _ in range(k):
        op()

    return run

  ratios, base = interleaved(
    {n: loop(op) for n, op in ops.items()}, floors, trials=15, target=0.03
  )
  return ratios, {n: base[f] for n, f in floors.items()}, {}


def case_eval_shape():
  import jax
  import jax.numpy as jnp
  from flax import nnx

  MLP = _mlp_class()

  # The raw side draws the same parameters as MLP(nnx.Rngs(0)); both sides
  # get a fresh function each call so neither hits JAX's trace cache.
  def raw_init():
    key = jax.random.key(0)
    init = jax.nn.initializers.lecun_normal()
    params = {}
    for i, (din, dout) in enumerate(((32, 64), (64, 64), (64, 10))):
      params[f'l{i}'] = {
        'kernel': init(jax.random.fold_in(key, i), (din, dout)),
        'bias': jnp.zeros(dout),
      }
    return params

  def loop(fn):
    def run(k):
      for _ in range(k):
        fn()

    return run

  name = 'nnx.eval_shape(MLP(...))'
  fns = {
    'jax.eval_shape': loop(lambda: jax.eval_shape(lambda: raw_init())),
    name: loop(lambda: nnx.eval_shape(lambda: MLP(nnx.Rngs(0)))),
  }
  ratios, base = interleaved(fns, {name: 'jax.eval_shape'}, 9, 0.05)
  return ratios, {name: base['jax.eval_shape']}, {}


def case_import():
  def seconds(stmt):
    code = (
      f'import time; t=time.perf_counter(); {stmt}; '
      'print(time.perf_counter()-t)'
    )
    return float(subprocess.check_output([sys.executable, '-c', code]))

  name = 'from flax import nnx'
  ratios, bases = [], []
  for _ in range(5):
    base = seconds('import jax')
    ratios.append(seconds(name) / base)
    bases.append(base)
  return {name: ratios}, {name: statistics.median(bases)}, {}


# -- driver -------------------------------------------------------------------


def _worker(case):
  ratios, floors, skipped = globals()[f'case_{case}']()
  print(json.dumps({'ratios': ratios, 'floors': floors, 'skipped': skipped}))


def _run_worker(python, case):
  env = dict(os.environ, JAX_PLATFORMS='cpu')
  out = subprocess.run(
    [python, str(pathlib.Path(__file__).resolve()), '--worker', case],
    capture_output=True,
    text=True,
    env=env,
    cwd=str(ROOT / 'benchmarks'),
  )
  if out.returncode:
    tail = out.stderr.strip().splitlines()[-1:] or ['no output']
    return {'ratios': {}, 'floors': {}, 'skipped': {'*': tail[0][:200]}}
  return json.loads(out.stdout.strip().splitlines()[-1])


def _quantile(xs, q):
  xs = sorted(xs)
  pos = q * (len(xs) - 1)
  lo = int(pos)
  hi = min(lo + 1, len(xs) - 1)
  return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _fmt(xs):
  if not xs:
    return '-'
  return (
    f'{statistics.median(xs):.3g}x '
    f'[{_quantile(xs, 0.1):.3g}-{_quantile(xs, 0.9):.3g}]'
  )


def main(argv):
  args = list(argv)
  reference = None
  rounds = 2
  if '--worker' in args:
    _worker(args[args.index('--worker') + 1])
    return
  if '--reference' in args:
    i = args.index('--reference')
    reference = args[i + 1]
    del args[i : i + 2]
  elif REFERENCE.exists():
    reference = str(REFERENCE)
  if '--rounds' in args:
    i = args.index('--rounds')
    rounds = int(args[i + 1])
    del args[i : i + 2]
  cases = [c for c in CASES if not args or c in args]
  pythons = {'project': sys.executable}
  if reference:
    pythons['flax'] = reference
  print(
    f'nnx_bench: {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, '
    f'load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; '
    f'Flax 0.12.8: {reference or "no reference env (project only)"}',
    flush=True,
  )
  for case in cases:
    results = {impl: [] for impl in pythons}
    for r in range(rounds):
      order = list(pythons.items())
      if r % 2:
        order.reverse()
      for impl, python in order:
        results[impl].append(_run_worker(python, case))
    print(f'\n{case:<40} {"project":<20} {"Flax 0.12.8":<20} floor', flush=True)
    names = []
    for res in results['project'] + results.get('flax', []):
      names += [
        n for n in list(res['ratios']) + list(res['skipped']) if n not in names
      ]
    for name in names:
      cells = []
      floor = None
      for impl in pythons:
        xs = [x for res in results[impl] for x in res['ratios'].get(name, [])]
        skip = next(
          (
            res['skipped'].get(name) or res['skipped'].get('*')
            for res in results[impl]
            if res['skipped'].get(name) or res['skipped'].get('*')
          ),
          None,
        )
        cells.append(_fmt(xs) if xs else f'skipped ({skip})' if skip else '-')
        if impl == 'project':
          fl = [
            res['floors'][name]
            for res in results[impl]
            if name in res['floors']
          ]
          floor = statistics.median(fl) if fl else None
      if len(cells) == 1:
        cells.append('-')
      floor_s = f'{floor * 1e6:.0f} us' if floor else ''
      print(f'{name:<40} {cells[0]:<20} {cells[1]:<20} {floor_s}', flush=True)


if __name__ == '__main__':
  main(sys.argv[1:])
