"""bridge.Module: Linen-style NNX Modules run with init/apply (Flax 0.12.8
values), and the interop helpers."""

import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx
from flax import linen as nn
from flax.nnx import bridge
from flax.nnx.bridge import module as bm

X = jnp.arange(8.0).reshape(2, 4) / 8
W0 = [
  [0.535089, -0.484864, -0.402226],
  [-0.619256, -0.46665, 0.317739],
  [0.389442, -0.546088, 0.843789],
  [-0.93099, -0.67658, 0.07247],
]


def close(a, b):
  np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


class Dense(bridge.Module):
  def __init__(self, dout):
    self.dout = dout

  @bridge.compact
  def __call__(self, x):
    w = self.param(
      'w', nnx.initializers.lecun_normal(), (x.shape[-1], self.dout)
    )
    b = self.param('b', nnx.initializers.normal(0.1), (self.dout,))
    return x @ w + b[None]


class MLP(bridge.Module):
  @bridge.compact
  def __call__(self, x):
    x = Dense(3)(x)
    c = self.variable('counts', 'n', jnp.zeros, ())
    c.set_value(c.get_value() + 1)
    return Dense(2, name='out')(x)


def test_init_and_apply():
  model = MLP()
  variables = model.init({'params': 0}, X)
  assert jax.tree.map(jnp.shape, variables) == {
    'counts': {'n': ()},
    'params': {
      'Dense_0': {'b': (3,), 'w': (4, 3)},
      'out': {'b': (2,), 'w': (3, 2)},
    },
  }
  close(variables['params']['Dense_0']['w'], W0)
  close(variables['params']['out']['b'], [-0.062194, 0.06248])
  close(variables['counts']['n'], 1.0)
  # the module itself is left unchanged
  assert 'Dense_0' not in vars(model)
  assert model.scope is None
  y, updates = model.apply(variables, X, mutable=['counts'])
  close(y, [[-0.274322, -0.090484], [-0.142616, 0.179233]])
  close(updates['counts']['n'], 2.0)
  assert list(updates) == ['params', 'counts']
  close(model.apply(variables, X), y)
  # an int seed is the default stream
  close(model.init(0, X)['params']['Dense_0']['w'], W0)
  out, init_vars = model.init_with_output(0, X)
  close(out, model.apply(init_vars, X))


def test_under_jax_jit_and_grad():
  model = MLP()
  variables = model.init(0, X)
  y = jax.jit(lambda v, x: model.apply(v, x))(variables, X)
  close(y, [[-0.274322, -0.090484], [-0.142616, 0.179233]])
  grads = jax.grad(
    lambda p: jnp.sum(model.apply({**variables, 'params': p}, X))
  )(variables['params'])
  assert jax.tree.map(jnp.shape, grads) == jax.tree.map(
    jnp.shape, variables['params']
  )


def test_context_and_naming():
  seen = {}

  class Probe(bridge.Module):
    @bridge.compact
    def __call__(self, x):
      entry = bridge.current_context()
      seen['module'] = bridge.current_module()
      seen['in_compact'] = entry.in_compact
      Dense(3)(x)
      Dense(3)(x)
      seen['counter'] = dict(entry.type_counter)
      return x

    def plain(self, x):
      seen['plain'] = bridge.current_context().in_compact
      return x

  assert bridge.current_context() is None
  assert bridge.current_module() is None
  probe = Probe()
  variables = probe.init(0, X)
  assert type(seen['module']) is Probe
  assert seen['in_compact'] is True
  assert seen['counter'] == {Dense: 2}
  assert sorted(variables['params']) == ['Dense_0', 'Dense_1']
  probe.apply(variables, X, method='plain')
  assert seen['plain'] is False
  assert bridge.current_context() is None


def test_errors():
  with pytest.raises(ValueError, match='must be initialized'):
    Dense(3)(X)
  model = MLP()
  variables = model.init(0, X)
  with pytest.raises(AttributeError):
    model.apply(variables, X, method='nope')
  with pytest.raises(KeyError):
    model.apply({'params': {}}, X)
  # Outside a compact method ``name`` is an ordinary constructor argument.
  with pytest.raises(TypeError, match="unexpected keyword argument 'name'"):
    Dense(3, name='outside')


def test_setup_and_attribute_priorities():
  class WithSetup(bridge.Module):
    def setup(self):
      self.a = nnx.Param(jnp.ones(4))

    def __call__(self, x):
      return x * self.a[None]

  assert bm.has_setup(WithSetup) and not bm.has_setup(1)
  model = WithSetup()
  assert 'a' not in vars(model)
  assert jax.tree.map(jnp.shape, model.init(0, X)) == {'params': {'a': (4,)}}
  # attributes assigned in setup keep the values setup gives them
  close(model.apply({'params': {'a': jnp.full((4,), 2.0)}}, X), X)

  class Ordered(bridge.Module):
    def __init__(self):
      self.z = nnx.Param(jnp.zeros(1))
      self.a = nnx.Param(jnp.zeros(1))

  ordered = Ordered()
  assert list(ordered.variables['params']) == ['a', 'z']
  ordered.set_attr_priority('z', bridge.AttrPriority.HIGH)
  assert ordered.attr_priorities == {'z': bridge.AttrPriority.HIGH}
  assert list(ordered.variables['params']) == ['z', 'a']
  assert [int(p) for p in bridge.AttrPriority] == [0, 20, 50, 100]


def test_scope_and_stack_records():
  scope = bridge.Scope(nnx.Rngs(0), True)
  assert scope.mutable is True
  copy = scope.copy()
  assert copy is not scope and copy.rngs is scope.rngs
  entry = bm.ModuleStackEntry(None, False)
  assert isinstance(entry.type_counter, collections.defaultdict)
  assert bm.MODULE_CONTEXT.module_stack == [None]
  assert isinstance(bm.ModuleState({'a': 1}), nnx.State)


class LDense(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    k = self.param(
      'kernel', nn.initializers.lecun_normal(), (x.shape[-1], self.features)
    )
    return x @ k


class NLin(nnx.Module):
  def __init__(self, din, dout, *, rngs):
    init = nnx.initializers.lecun_normal()
    self.w = nnx.Param(init(rngs.params(), (din, dout)))

  def __call__(self, x):
    return x @ self.w[...]


class Top(bridge.Module):
  @bridge.compact
  def __call__(self, x):
    a = bridge.nnx_in_bridge_mdl(lambda rngs: NLin(4, 3, rngs=rngs))
    b = bridge.linen_in_bridge_mdl(LDense(3))
    c = bridge.linen_in_bridge_mdl(LDense(2), name='named')
    return c(a(x) + b(x))


def test_interop_helpers():
  top = Top()
  variables = top.init({'params': 0}, X)
  assert jax.tree.map(jnp.shape, variables) == {
    'params': {
      'LDense_0': {'kernel': (4, 3)},
      'NLin_0': {'w': (4, 3)},
      'named': {'kernel': (3, 2)},
    }
  }
  close(variables['params']['NLin_0']['w'], W0)
  close(
    variables['params']['LDense_0']['kernel'][0], [-0.00418, 0.308882, 0.574201]
  )
  close(top.apply(variables, X), [[0.738643, 0.506257], [1.81439, 1.080137]])
  grads = jax.grad(lambda p: jnp.sum(top.apply({'params': p}, X)))(
    variables['params']
  )
  close(grads['named']['kernel'][:, 0], [-1.95978, -1.045501, 1.708444])


def test_bridge_modules_are_not_pytrees():
  class Holder(bridge.Module):
    a: int

  holder = Holder(1)
  assert jax.tree.leaves(holder) == [holder]
  # plain containers of Variables are fine, and nnx.update adds subtrees
  holder.layers = [nnx.Param(jnp.ones(2))]
  nnx.update(holder, {'extra': {'c': nnx.Param(jnp.array(2))}})
  assert type(holder.extra) is dict
  paths = [p for p, _ in nnx.to_flat_state(nnx.state(holder))]
  assert paths == [('extra', 'c'), ('layers', 0)]


class Leaf(bridge.Module):
  dout: int

  @bridge.compact
  def __call__(self, x):
    return x @ self.param('w', nnx.initializers.ones, (x.shape[-1], self.dout))


def test_name_and_parent_arguments_inside_methods():
  class Named(bridge.Module):
    name: str

  class Outer(bridge.Module):
    def setup(self):
      # ``name=`` attaches in setup too; it comes first in the variables
      self.group = [Leaf(2, name='first'), Leaf(2)]

    @bridge.compact
    def __call__(self, x):
      named = Named(name='given')
      assert named.name == 'given' and self.given is named
      detached = Leaf(2, parent=None)
      # (it uses up the automatic name Leaf_0)
      assert detached.scope is None and 'Leaf_0' not in vars(self)
      with pytest.raises(ValueError, match="'parent' can only be set to None"):
        Leaf(2, parent=self)
      for layer in self.group:
        x = layer(x)
      return Leaf(2)(x)

  variables = Outer().init(0, jnp.ones((1, 2)))
  assert jax.tree.map(jnp.shape, variables) == {
    'params': {
      'Leaf_1': {'w': (2, 2)},
      'first': {'w': (2, 2)},
      'group': {1: {'w': (2, 2)}},
    }
  }
  doubled = jax.tree.map(lambda a: 2 * a, variables)
  close(Outer().apply(doubled, jnp.ones((1, 2))), [[64.0, 64.0]])
  with pytest.raises(TypeError, match="unexpected keyword argument 'name'"):
    Leaf(2, name='outside')


def test_interop_helpers_in_setup_are_named_by_attribute():
  class Outer(bridge.Module):
    def setup(self):
      self.lin = bridge.nnx_in_bridge_mdl(
        lambda r: nnx.Linear(2, 2, rngs=r), name='ignored'
      )
      self.dense = bridge.linen_in_bridge_mdl(nn.Dense(2))

    def __call__(self, x):
      return self.dense(self.lin(x))

  x = jnp.ones((1, 2))
  variables = Outer().init(0, x)
  assert sorted(variables['params']) == ['dense', 'lin']
  y = Outer().apply(variables, x)
  doubled = jax.tree.map(lambda a: 2 * a, variables)
  assert not np.allclose(Outer().apply(doubled, x), y)
  with pytest.raises(AssertionError, match='only needed inside bridge Module'):
    bridge.nnx_in_bridge_mdl(lambda r: nnx.Linear(2, 2, rngs=r))


def test_setup_runs_when_a_parent_reads_its_attributes():
  class Inner(bridge.Module):
    def setup(self):
      self.layer = Leaf(2)

    def __call__(self, x):
      return self.layer(x)

  class Top(bridge.Module):
    def setup(self):
      self.zzz = Inner()
      self.set_attr_priority('zzz', bridge.AttrPriority.HIGH)
      self.aaa = self.zzz
      self.direct = self.aaa.layer  # runs Inner.setup

    def __call__(self, x):
      return self.aaa(x)

  variables = Top().init(0, jnp.ones((1, 2)))
  # shared Modules appear once, under the highest-priority name
  assert jax.tree.map(jnp.shape, variables) == {
    'params': {'zzz': {'layer': {'w': (2, 2)}}}
  }
  with pytest.raises(AttributeError, match="'Inner' object has no attribute"):
    Inner().layer


def test_init_marks_the_running_modules_initializing_and_setup():
  seen = []

  def flags(m):
    return (m._pytree__state.initializing, m._pytree__state.is_setup)

  class Sub(bridge.Module):
    @bridge.compact
    def __call__(self, x):
      seen.append(('sub', flags(self)))
      return x

  class Top(bridge.Module):
    def setup(self):
      seen.append(('setup', flags(self)))
      self.sub = Sub()
      self.wrapped = bridge.ToNNX(nn.Dense(3), rngs=nnx.Rngs(0))

    def __call__(self, x):
      seen.append(('top', flags(self), self))
      self.wrapped(x)
      return self.sub(x)

  top = Top()
  variables = top.init(0, X)
  assert [s[:2] for s in seen] == [
    ('setup', (True, False)),
    ('top', (True, True)),
    ('sub', (True, False)),
  ]
  # reset after init; the Module that ran keeps its setup flag
  assert flags(seen[1][2]) == (False, True)
  assert flags(top) == (False, False)
  seen.clear()
  top.apply(variables, X)
  assert [s[:2] for s in seen] == [
    ('setup', (False, False)),
    ('top', (False, True)),
    ('sub', (False, False)),
  ]


def test_apply_gives_variables_to_children_made_under_transforms():
  # Children a vmap in setup creates get the variables apply() passed for
  # them (the pending variables travel with the Module through the
  # transform), and a scan over them finds them to scan.
  class Layer(bridge.Module):
    dout: int

    @bridge.compact
    def __call__(self, x):
      w = self.param('w', nn.initializers.normal(), (x.shape[-1], self.dout))
      return x @ w

  class Stack(bridge.Module):
    n: int

    def setup(self):
      @nnx.compat.split_rngs(splits=self.n)
      @nnx.compat.vmap(
        in_axes=(nnx.StateAxes({nnx.RngState: 0, ...: None}),),
        axis_size=self.n,
        transform_metadata={nnx.PARTITION_NAME: None},
      )
      def create(parent):
        parent.block = Layer(4)

      create(self)

    def __call__(self, x):
      @nnx.compat.split_rngs(splits=self.n)
      @nnx.compat.scan(
        in_axes=(0, nnx.Carry),
        out_axes=nnx.Carry,
        transform_metadata={nnx.PARTITION_NAME: None},
      )
      def forward(block, x):
        return block(x)

      return forward(self.block, x)

  model = Stack(n=3)
  x = jnp.ones((2, 4))
  variables = model.init(jax.random.key(0), x)
  w = variables['params']['block']['w']
  assert w.shape == (3, 4, 4)
  y = model.apply(variables, x)
  close(y, x @ w[0] @ w[1] @ w[2])
  # apply leaves the variables it was given where they were
  again = model.apply(variables, x, mutable=True)[1]
  assert jax.tree.map(jnp.shape, again) == {
    'params': {'block': {'w': (3, 4, 4)}}
  }


def test_apply_pending_variables_stay_out_of_the_paths_of_the_state():
  class Layer(bridge.Module):
    @bridge.compact
    def __call__(self, x):
      return x @ self.param('w', nn.initializers.ones, (x.shape[-1], 2))

  paths = []

  class Top(bridge.Module):
    @bridge.compact
    def __call__(self, x):
      self.layer = Layer()
      y = self.layer(x)
      state = nnx.state(self, nnx.Param)
      paths.extend(p for p, _ in state.flat_state())
      return y

  top = Top()
  variables = top.init(0, X)
  top.apply(variables, X)
  assert paths == [('Layer_0', 'w'), ('Layer_0', 'w')]
