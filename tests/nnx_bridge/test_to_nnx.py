"""bridge.ToNNX: Linen Modules run as NNX Modules (Flax 0.12.8 values)."""

import functools
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import errors, nnx
from flax import linen as nn
from flax.nnx import bridge


class LDense(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    k = self.param(
      'kernel', nn.initializers.lecun_normal(), (x.shape[-1], self.features)
    )
    b = self.param('bias', nn.initializers.zeros_init(), (self.features,))
    return x @ k + b[None]


class Block(nn.Module):
  @nn.compact
  def __call__(self, x, train=True):
    x = LDense(4)(x)
    x = nn.BatchNorm(use_running_average=not train)(x)
    x = nn.Dropout(0.5, deterministic=not train)(x)
    self.sow('intermediates', 'h', x)
    return LDense(2, name='out')(x)


X = jnp.arange(6.0).reshape(2, 3) / 6


def close(a, b):
  np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_lazy_init_creates_linen_variables_as_attributes():
  model = bridge.ToNNX(LDense(2), rngs=nnx.Rngs(0))
  assert 'kernel' not in vars(model)
  out = bridge.lazy_init(model, X)
  assert out is model
  assert isinstance(model.kernel, nnx.Param)
  assert isinstance(model.bias, nnx.Param)
  close(
    model.kernel[...],
    [
      [0.003657, -0.46365],
      [-0.43534, 0.156068],
      [-0.650549, 0.366949],
    ],
  )
  # one key per stream for init, one more per call
  assert int(model.rngs.default.count[...]) == 1
  close(model(X), [[-0.289406, 0.148328], [-0.830523, 0.178011]])
  assert int(model.rngs.default.count[...]) == 2


def test_lazy_init_method_form_and_properties():
  linen_module = LDense(2)
  model = bridge.ToNNX(linen_module, rngs=nnx.Rngs(0))
  assert model.lazy_init(X) is model
  assert model.module is linen_module
  assert isinstance(model.rngs, nnx.Rngs)
  assert model.kernel.shape == (3, 2)


def test_single_key_is_the_params_stream():
  model = bridge.ToNNX(LDense(2), rngs=jax.random.key(1))
  assert list(model.rngs) == ['params']
  assert int(model.rngs.params.count[...]) == 0
  bridge.lazy_init(model, X)
  close(
    model.kernel[...],
    [
      [0.052119, -0.180194],
      [-0.892276, 0.540957],
      [0.731768, 0.423988],
    ],
  )


def test_no_rngs():
  assert bridge.ToNNX(LDense(2)).rngs is None


def test_conv_values():
  conv = bridge.ToNNX(nn.Conv(2, (2,)), rngs=nnx.Rngs(0))
  bridge.lazy_init(conv, jnp.ones((1, 4, 3)))
  assert conv.kernel.shape == (2, 3, 2)
  close(
    conv.kernel[...][0],
    [[0.002586, -0.32785], [-0.307832, 0.110357], [-0.460008, 0.259472]],
  )
  close(
    conv(jnp.arange(12.0).reshape(1, 4, 3) / 12),
    [
      [
        [-0.03922, 0.117078],
        [-0.245027, 0.215568],
        [-0.450834, 0.314058],
        [-0.676261, 0.083926],
      ]
    ],
  )


def test_collections_map_to_variable_types():
  class WithCounter(nn.Module):
    @nn.compact
    def __call__(self, x):
      self.variable('counter', 'n', lambda: jnp.zeros((), jnp.int32))
      return Block()(x)

  model = bridge.ToNNX(WithCounter(), rngs=nnx.Rngs(params=0, dropout=1))
  bridge.lazy_init(model, X)
  sub = model.Block_0
  assert isinstance(sub, dict)
  assert sorted(sub) == ['BatchNorm_0', 'LDense_0', 'out']
  assert isinstance(sub['LDense_0']['kernel'], nnx.Param)
  assert isinstance(sub['BatchNorm_0']['mean'], nnx.BatchStat)
  assert isinstance(sub['BatchNorm_0']['scale'], nnx.Param)
  counter_type = type(model.n)
  assert counter_type.__name__ == 'counter'
  assert issubclass(counter_type, nnx.Variable)
  assert nnx.variable_name_from_type(counter_type) == 'counter'
  # intermediates are not kept by init
  assert 'h' not in sub


def test_mutable_collections_are_written_back():
  model = bridge.ToNNX(Block(), rngs=nnx.Rngs(params=0, dropout=1))
  bridge.lazy_init(model, X)
  close(model.BatchNorm_0['mean'][...], [0.0] * 4)
  y = model(X, mutable=['batch_stats', 'intermediates'])
  close(y, [[-0.816656, -1.732645], [2.020019, 2.391668]])
  close(
    model.BatchNorm_0['mean'][...],
    [0.001927, -0.000189, -0.004152, -0.005192],
  )
  assert isinstance(model.h, nnx.Intermediate)
  (h,) = model.h.get_value()
  close(
    h,
    [
      [-1.999479, -1.998744, 0.0, 0.0],
      [1.999479, 1.998744, -1.999831, 0.0],
    ],
  )
  y = model(X, mutable=['batch_stats', 'intermediates'])
  assert len(model.h.get_value()) == 2  # sow appends
  close(y, [[-0.849175, 0.00479], [0.884291, 0.428171]])
  close(model(X, train=False), [[0.056006, 0.142828], [0.434301, 0.681882]])
  assert int(model.rngs.params.count[...]) == 4
  assert int(model.rngs.dropout.count[...]) == 4


def test_call_rngs_do_not_use_own_streams():
  model = bridge.ToNNX(Block(), rngs=nnx.Rngs(params=0, dropout=1))
  bridge.lazy_init(model, X)
  model(X, mutable=['batch_stats'])
  model(X, mutable=['batch_stats'])
  model(X, train=False)
  y = model(X, mutable=['batch_stats'], rngs=nnx.Rngs(dropout=7))
  close(y, [[-0.002597, -2.170396], [0.884291, 0.428171]])
  assert int(model.rngs.dropout.count[...]) == 4


def test_immutable_collection_raises():
  model = bridge.ToNNX(Block(), rngs=nnx.Rngs(params=0, dropout=1))
  bridge.lazy_init(model, X)
  with pytest.raises(errors.ModifyScopeVariableError):
    model(X)


def test_call_before_init_raises():
  model = bridge.ToNNX(LDense(2), rngs=nnx.Rngs(0))
  with pytest.raises(errors.ScopeCollectionNotFound):
    model(X)


def test_method_by_name_and_function():
  class WithMethod(nn.Module):
    @nn.compact
    def __call__(self, x):
      return LDense(2)(x)

    def triple(self, x):
      return 3 * x

  model = bridge.lazy_init(bridge.ToNNX(WithMethod(), rngs=nnx.Rngs(0)), X)
  close(model(X, method='triple'), 3 * X)
  close(model(X, method=WithMethod.triple), 3 * X)


def _train_step(model, x, y):
  def loss_fn(model):
    return jnp.mean((model(x) - y) ** 2)

  loss, grads = nnx.value_and_grad(loss_fn)(model)
  params = nnx.state(model, nnx.Param)
  nnx.update(model, jax.tree.map(lambda p, g: p - 0.1 * g, params, grads))
  return loss


def test_train_step_under_nnx_jit():
  model = bridge.lazy_init(bridge.ToNNX(LDense(2), rngs=nnx.Rngs(0)), X)
  step = nnx.jit(_train_step)
  target = jnp.ones((2, 2))
  close(step(model, X, target), 1.603598)
  close(step(model, X, target), 1.125389)
  close(
    model.kernel[...],
    [
      [0.087478, -0.426484],
      [-0.30376, 0.218938],
      [-0.471209, 0.455522],
    ],
  )
  graphdef, state = nnx.split(model)
  merged = nnx.merge(graphdef, state)
  close(merged(X), [[0.07886, 0.342551], [-0.264885, 0.466539]])
  assert sorted(nnx.state(model, nnx.Param)) == ['bias', 'kernel']


def test_under_jax_jit_with_split_state():
  model = bridge.lazy_init(bridge.ToNNX(LDense(2), rngs=nnx.Rngs(0)), X)
  graphdef, state = nnx.split(model)

  @jax.jit
  def forward(state, x):
    return nnx.merge(graphdef, state)(x)

  close(forward(state, X), [[-0.289406, 0.148328], [-0.830523, 0.178011]])


def test_lazy_init_of_an_nnx_module_holding_wrappers():
  class Outer(nnx.Module):
    def __init__(self, rngs):
      self.a = bridge.ToNNX(LDense(4), rngs=rngs)
      self.b = bridge.ToNNX(LDense(2), rngs=rngs)

    def __call__(self, x):
      return self.b(self.a(x))

  outer = bridge.lazy_init(Outer(nnx.Rngs(0)), X)
  assert outer.a.kernel.shape == (3, 4)
  assert outer.b.kernel.shape == (4, 2)
  assert outer(X).shape == (2, 2)


def test_lazy_init_again_reinitializes():
  model = bridge.lazy_init(bridge.ToNNX(LDense(2), rngs=nnx.Rngs(0)), X)
  kernel = model.kernel
  first = kernel[...]
  bridge.lazy_init(model, X)
  assert model.kernel is kernel
  assert not np.allclose(first, model.kernel[...])
  assert int(model.rngs.default.count[...]) == 2


def test_lazy_init_accepts_modules_and_their_methods_only():
  class Outer(nnx.Module):
    def __init__(self):
      self.inner = bridge.ToNNX(LDense(2), rngs=nnx.Rngs(0))

    def go(self, x):
      return self.inner(x)

  outer = Outer()
  method = outer.go
  assert bridge.lazy_init(method, X) is method
  assert outer.inner.kernel.shape == (3, 2)
  with pytest.raises(ValueError, match='method of an NNX Module'):
    bridge.lazy_init(lambda x: x, X)
  with pytest.raises(TypeError, match='__call__'):
    bridge.lazy_init(outer, X)


def test_linen_methods_as_attributes_lazy_init_alone():
  class TwoParts(nn.Module):
    @nn.compact
    def __call__(self, x):
      return self.project(x) + self.param('b', nn.zeros_init(), (1, 2))

    @nn.compact
    def project(self, x):
      return x @ self.param('w', nn.initializers.ones, (3, 2))

  model = bridge.ToNNX(TwoParts(), rngs=nnx.Rngs(0))
  project = model.project
  assert project.__self__ is model
  assert project.keywords == {'method': TwoParts.project}
  # lazy_init takes it (its __self__ is the Module) and creates only the
  # variables that method declares
  assert bridge.lazy_init(project, X) is project
  assert sorted(k for k, _ in nnx.state(model, nnx.Param).items()) == ['w']
  close(model.project(X), X @ jnp.ones((3, 2)))
  with pytest.raises(errors.ScopeParamNotFoundError):
    model(X)
  # a partial that does not name its Module is refused
  with pytest.raises(
    ValueError, match=r'needs to be a method of an NNX Module\.$'
  ):
    bridge.lazy_init(functools.partial(model.__call__, method='project'), X)
  with pytest.raises(AttributeError, match="no attribute 'missing'"):
    model.missing


class _Holder(nnx.Module):
  """Records ``_pytree__state.initializing`` of what it sees."""

  def __init__(self):
    self.inner = bridge.ToNNX(LDense(2), rngs=nnx.Rngs(0))
    self.items = nnx.List([nnx.Linear(3, 3, rngs=nnx.Rngs(1))])
    self.seen = nnx.data({})

  def __call__(self, x):
    def flag(m):
      return m._pytree__state.initializing

    seen = self.seen
    seen['self'] = flag(self)
    seen['children'] = (flag(self.inner), flag(self.items[0]))
    seen['merged'] = flag(nnx.merge(*nnx.split(self)))
    seen['tree_merged'] = flag(nnx.merge(*nnx.split(self.items, graph=False)))
    seen['copies'] = (flag(nnx.clone(self.items[0])), flag(copy_of(self)))
    seen['jax_tree'] = flag(jax.tree.map(lambda a: a, self.items))
    seen['jit'] = nnx.jit(flag)(self)
    seen['new'] = flag(nnx.Linear(1, 1, rngs=nnx.Rngs(0)))
    # a graphdef made while initializing differs from the plain one
    seen['same_graphdef'] = nnx.graphdef(self.items) == nnx.graphdef(
      nnx.List([nnx.Linear(3, 3, rngs=nnx.Rngs(1))])
    )
    return self.inner(x)


def copy_of(m):
  return pickle.loads(pickle.dumps(m))


def test_lazy_init_marks_the_graph_initializing_for_the_call():
  model = _Holder()
  assert not model._pytree__state.initializing
  bridge.lazy_init(model, X)
  seen = dict(model.seen)
  assert seen['self'] and seen['children'] == (True, True)
  assert seen['merged'] and seen['tree_merged'] and seen['jit']
  assert seen['copies'] == (True, True) and seen['jax_tree']
  assert not seen['new'] and not seen['same_graphdef']
  # reset afterwards, and the wrapper was initialized
  assert not model._pytree__state.initializing
  assert not model.inner._pytree__state.initializing
  assert model.inner.kernel.shape == (3, 2)


def test_lazy_init_initializes_only_the_wrappers_of_its_graph():
  class Outer(nnx.Module):
    def __init__(self):
      self.a = bridge.ToNNX(LDense(2), rngs=nnx.Rngs(0))

    def __call__(self, x):
      fresh = bridge.ToNNX(LDense(4), rngs=nnx.Rngs(1))
      with pytest.raises(errors.ScopeCollectionNotFound):
        fresh(x)
      return self.a(x)

  model = Outer()
  bridge.lazy_init(model, X)
  assert model.a.kernel.shape == (3, 2)


def test_lazy_init_resets_the_flags_on_error_and_when_nested():
  class Inner(nnx.Module):
    def __init__(self):
      self.t = bridge.ToNNX(LDense(2), rngs=nnx.Rngs(0))
      self.flags = nnx.data([])

    def __call__(self, x):
      bridge.lazy_init(self.t, x)
      # the nested call leaves its own graph reset
      self.flags.append(
        (self._pytree__state.initializing, self.t._pytree__state.initializing)
      )
      raise ValueError('boom')

  model = Inner()
  with pytest.raises(ValueError, match='boom'):
    bridge.lazy_init(model, X)
  assert model.flags == [(True, False)]
  assert not model._pytree__state.initializing
