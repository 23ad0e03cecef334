"""nn.jit shares traces between equally configured Modules, and its keys.

Trace counts and keys are Flax 0.12.8's: each test counts traces with a
Python side effect in the jitted body (it runs only while JAX traces).
"""

import jax
import jax.numpy as jnp

from flax import linen as nn

normal = jax.nn.initializers.normal()


class Dense(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    return x @ self.param('k', normal, (x.shape[-1], self.features))


def test_identical_siblings_share_one_trace():
  traces = []

  class Leaf(nn.Module):
    k: int

    @nn.jit
    @nn.compact
    def __call__(self, x):
      traces.append(self.path)
      return x * self.param('w', jax.nn.initializers.ones, ())

  class Top(nn.Module):
    @nn.compact
    def __call__(self, x):
      for _ in range(3):
        x = Leaf(0)(x)
      return x

  v = Top().init(jax.random.key(0), 1.0)
  traces.clear()
  Top().apply(v, 1.0)
  # The first call gets a weakly typed Python float, the others an array.
  assert traces == [('Leaf_0',), ('Leaf_1',)]


def test_siblings_get_their_own_keys_from_one_trace():
  traces = []

  class Leaf(nn.Module):
    @nn.jit
    @nn.compact
    def __call__(self, x):
      traces.append(self.path)
      w = self.param('w', normal, ())
      return x * w + jax.random.uniform(self.make_rng('dropout'), ())

  class Top(nn.Module):
    @nn.compact
    def __call__(self, x):
      for _ in range(3):
        x = Leaf()(x)
      return x

  x = jnp.float32(1.0)
  rngs = {'params': jax.random.key(0), 'dropout': jax.random.key(1)}
  v = Top().init(rngs, x)
  assert traces == [('Leaf_0',)]
  w = {k: round(float(p['w']), 6) for k, p in v['params'].items()}
  assert w == {'Leaf_0': -0.016885, 'Leaf_1': -0.004942, 'Leaf_2': 0.01761}
  traces.clear()
  y = Top().apply(v, x, rngs={'dropout': jax.random.key(2)})
  assert traces == [('Leaf_0',)]
  assert round(float(y), 5) == 0.9539
  traces.clear()
  Top().apply(v, x, rngs={'dropout': jax.random.key(2)})
  assert traces == []


def test_jit_and_fold_rngs_draw_the_same_keys():
  class R(nn.Module):
    @nn.compact
    def __call__(self):
      a = self.make_rng('x')
      b, c = nn.fold_rngs(lambda m: (m.make_rng('x'), m.make_rng('x')))(self)
      d = self.make_rng('x')
      e = nn.jit(lambda m: (m.make_rng('x'), m.make_rng('x')))(self)
      g = self.make_rng('x')
      return [jax.random.key_data(k).tolist() for k in (a, b, c, d, *e, g)]

  assert R().apply({}, rngs={'x': jax.random.key(3)}) == [
    [1118596564, 1882671556],
    [2742916041, 517886849],
    [1301172939, 21893408],
    [3966628953, 3073366241],
    [2335267565, 675265700],
    [81901942, 3632202028],
    [2733499891, 2384831614],
  ]

  class J(nn.Module):
    def __call__(self, jit):
      g = lambda m: m.make_rng('params')  # noqa: E731
      return (nn.jit(g) if jit else nn.fold_rngs(g))(self)

  k1 = J().apply({}, True, rngs={'params': jax.random.key(0)})
  k2 = J().apply({}, False, rngs={'params': jax.random.key(0)})
  assert (jax.random.key_data(k1) == jax.random.key_data(k2)).all()


def test_fold_rngs_params_match_jit():
  class Leaf(nn.Module):
    @nn.fold_rngs
    @nn.compact
    def __call__(self, x):
      w = self.param('w', normal, ())
      return x * w + jax.random.uniform(self.make_rng('dropout'), ())

  class Top(nn.Module):
    @nn.compact
    def __call__(self, x):
      for _ in range(3):
        x = Leaf()(x)
      return x

  x = jnp.float32(1.0)
  rngs = {'params': jax.random.key(0), 'dropout': jax.random.key(1)}
  v = Top().init(rngs, x)
  w = {k: round(float(p['w']), 6) for k, p in v['params'].items()}
  assert w == {'Leaf_0': -0.016885, 'Leaf_1': -0.004942, 'Leaf_2': 0.01761}
  y = Top().apply(v, x, rngs={'dropout': jax.random.key(2)})
  assert round(float(y), 5) == 0.9539


def test_repeated_calls_of_one_instance():
  traces = []

  def count(Inner):
    class Loop(nn.Module):
      @nn.compact
      def __call__(self, x):
        m = Inner()
        for _ in range(4):
          x = m(x)
        return x

    x = jnp.ones((1, 3))
    v = Loop().init(jax.random.key(0), x)
    traces.clear()
    Loop().apply(v, x)
    first = len(traces)
    traces.clear()
    Loop().apply(v, x)
    return first, len(traces)

  class ParamOnly(nn.Module):
    @nn.jit
    @nn.compact
    def __call__(self, x):
      traces.append(1)
      return x @ self.param('k', normal, (3, 3))

  class SetupChild(nn.Module):
    def setup(self):
      self.d = Dense(3)

    @nn.jit
    def __call__(self, x):
      traces.append(1)
      return self.d(x)

  class SetupParam(nn.Module):
    def setup(self):
      self.k = self.param('k', normal, (3, 3))

    @nn.jit
    def __call__(self, x):
      traces.append(1)
      return x @ self.k

  assert count(ParamOnly) == (1, 0)
  assert count(SetupChild) == (1, 0)
  assert count(SetupParam) == (1, 0)


def test_bound_module_traces_once_for_several_calls():
  traces = []

  class Inner(nn.Module):
    def setup(self):
      self.d = Dense(3)

    @nn.jit
    def __call__(self, x):
      traces.append(1)
      return self.d(x)

  x = jnp.ones((1, 3))
  v = Inner().init(jax.random.key(0), x)
  traces.clear()
  m = Inner().bind(v)
  m(x)
  m(x)
  m(x)
  assert traces == [1]
  m = Inner().bind(v)
  m.d
  m(x)
  assert traces == [1]


def test_scan_over_jitted_cell_with_broadcast_params():
  traces = []

  class Cell(nn.Module):
    @nn.compact
    def __call__(self, c, x):
      traces.append(1)
      w = self.param('w', normal, ())
      return c * w + x, c

  class Scanned(nn.Module):
    @nn.compact
    def __call__(self, c, xs):
      S = nn.scan(
        nn.jit(Cell),
        variable_broadcast='params',
        split_rngs={'params': False},
      )
      return S()(c, xs)

  xs = jnp.ones((8,))
  v = Scanned().init(jax.random.key(0), jnp.float32(1.0), xs)
  assert len(traces) == 2
  assert jax.tree_util.tree_map(jnp.shape, v) == {
    'params': {'ScanJitCell_0': {'w': ()}}
  }
  traces.clear()
  Scanned().apply(v, jnp.float32(1.0), xs)
  assert len(traces) == 1


def test_jitted_class_instances_share_a_trace():
  traces = []

  class Cell(nn.Module):
    @nn.compact
    def __call__(self, c, x):
      traces.append(1)
      w = self.param('w', normal, ())
      return c * w + x, c

  class Unrolled(nn.Module):
    @nn.compact
    def __call__(self, c, xs):
      J = nn.jit(Cell)
      for i in range(4):
        c, _ = J()(c, xs[i])
      return c

  v = Unrolled().init(jax.random.key(0), jnp.float32(1.0), jnp.ones((8,)))
  assert len(traces) == 1
  w = {k: round(float(p['w']), 6) for k, p in v['params'].items()}
  assert w == {
    'JitCell_0': 0.002485,
    'JitCell_1': 0.022496,
    'JitCell_2': 0.006923,
    'JitCell_3': 0.00838,
  }


def test_jitted_class_keeps_the_module_name():
  seen = []

  class Leaf(nn.Module):
    k: int

    def __call__(self, x):
      seen.append((self.name, self.scope.path))
      return x

  JitLeaf = nn.jit(Leaf)

  class Top(nn.Module):
    @nn.compact
    def __call__(self, x):
      JitLeaf(0)(x)
      JitLeaf(1, name='named')(x)
      return x

  Top().apply({}, jnp.ones(()))
  assert seen == [('JitLeaf_0', ('JitLeaf_0',)), ('named', ('named',))]
