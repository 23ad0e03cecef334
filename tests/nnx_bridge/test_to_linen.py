"""bridge.ToLinen / to_linen / to_linen_class: NNX Modules run in Linen
(Flax 0.12.8 values)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx
from flax import linen as nn
from flax.core import FrozenDict, meta
from flax.nnx import bridge


@pytest.fixture
def no_eager_sharding():
  # Variables with sharding metadata are placed on creation (eager
  # sharding) and need a mesh; these tests only look at the metadata.
  with nnx.use_eager_sharding(False):
    yield


class NLinear(nnx.Module):
  def __init__(
    self, din, dout, *, rngs, kernel_init=nnx.initializers.lecun_normal()
  ):
    self.kernel = nnx.Param(kernel_init(rngs.params(), (din, dout)))
    self.bias = nnx.Param(jnp.zeros((dout,)))

  def __call__(self, x):
    return x @ self.kernel[...] + self.bias[...][None]

  def double(self, x):
    return 2 * self(x)


class Net(nnx.Module):
  def __init__(self, *, rngs):
    self.lin = NLinear(3, 4, rngs=rngs)
    self.bn = nnx.BatchNorm(4, rngs=rngs)
    self.do = nnx.Dropout(0.5, rngs=rngs)
    self.steps = nnx.BatchStat(jnp.zeros((), jnp.int32))

  def __call__(self, x):
    self.steps[...] += 1
    h = self.do(self.bn(self.lin(x)))
    self.sow(nnx.Intermediate, 'h', h)
    return h


X = jnp.arange(6.0).reshape(2, 3) / 6
KERNEL = [
  [0.629356, -0.329102],
  [0.154434, 0.394523],
  [0.103701, 0.915261],
]
Y = [[0.060306, 0.370841], [0.504051, 0.861182]]
NET_Y = [[-1.99975, 0.0, 0.0, 0.0], [0.0, 0.0, 1.999882, 1.996446]]


def close(a, b):
  np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def shapes(tree):
  return jax.tree.map(lambda a: tuple(a.shape), tree)


def test_params_created_at_init_from_the_linen_params_stream():
  model = bridge.ToLinen(NLinear, args=(3, 2))
  variables = model.init(jax.random.key(0), X)
  assert shapes(variables) == {'params': {'bias': (2,), 'kernel': (3, 2)}}
  close(variables['params']['kernel'], KERNEL)
  close(model.apply(variables, X), Y)


def test_nnx_method_by_name_and_function():
  model = bridge.ToLinen(NLinear, args=(3, 2))
  variables = model.init(jax.random.key(0), X)
  close(model.apply(variables, X, nnx_method='double'), 2 * np.asarray(Y))
  close(model.apply(variables, X, nnx_method=NLinear.double), 2 * np.asarray(Y))


def test_to_linen_fields_and_skip_rng():
  model = bridge.to_linen(NLinear, 3, 2, name='lin', use_bias_unused=None)
  assert model.name == 'lin'
  assert model.args == (3, 2)
  assert model.kwargs == FrozenDict({'use_bias_unused': None})
  assert model.metadata_fn is bridge.variables.to_linen_var
  skip = bridge.to_linen(NLinear, 3, 2, skip_rng=True, rngs=nnx.Rngs(5))
  close(
    skip.init(jax.random.key(0), X)['params']['kernel'],
    [
      [0.259487, 0.703046],
      [-0.413682, 0.754802],
      [0.378726, 0.016542],
    ],
  )


def test_conv():
  conv = bridge.to_linen(nnx.Conv, 3, 2, (2,))
  x = jnp.arange(12.0).reshape(1, 4, 3) / 12
  variables = conv.init(jax.random.key(0), x)
  assert shapes(variables) == {'params': {'bias': (2,), 'kernel': (2, 3, 2)}}
  close(
    conv.apply(variables, x),
    [
      [
        [0.262344, -0.153348],
        [0.609837, -0.221788],
        [0.957331, -0.290227],
        [0.491984, 0.651197],
      ]
    ],
  )


# Net sows outside nnx.capture: deprecated, and warned about, as in Flax
# 0.12.8 (asserted in test_sow_inside_to_linen_warns).
@pytest.mark.filterwarnings("ignore:Using 'Module.sow\\(\\)' outside")
def test_collections_rngs_and_mutable_state():
  net = bridge.to_linen(Net)
  variables = net.init(
    {'params': jax.random.key(0), 'dropout': jax.random.key(1)}, X
  )
  assert shapes(variables) == {
    'batch_stats': {'bn': {'mean': (4,), 'var': (4,)}, 'steps': ()},
    'params': {
      'bn': {'bias': (4,), 'scale': (4,)},
      'lin': {'bias': (4,), 'kernel': (3, 4)},
    },
  }
  # init stores the state the module was built with
  assert int(variables['batch_stats']['steps']) == 0
  y, updates = net.apply(
    variables,
    X,
    rngs={'dropout': jax.random.key(2)},
    mutable=['batch_stats', 'intermediates'],
  )
  close(y, NET_Y)
  assert shapes(updates) == {
    'batch_stats': {'bn': {'mean': (4,), 'var': (4,)}, 'steps': ()},
    'intermediates': {'h': ((2, 4),)},
  }
  close(
    updates['batch_stats']['bn']['mean'],
    [0.0024, -0.003923, 0.005254, 0.00061],
  )
  assert int(updates['batch_stats']['steps']) == 1
  # without a dropout stream, the default seed 0 is used
  close(
    net.apply(variables, X, mutable=['batch_stats'])[0],
    [[0.0, 0.0, -1.999883, 0.0], [0.0, 0.0, 0.0, 1.996446]],
  )
  # changes to immutable collections are dropped
  close(net.apply(variables, X, rngs={'dropout': jax.random.key(2)}), NET_Y)


# Net sows outside nnx.capture: deprecated, and warned about, as in Flax
# 0.12.8 (asserted in test_sow_inside_to_linen_warns).
@pytest.mark.filterwarnings("ignore:Using 'Module.sow\\(\\)' outside")
def test_under_jax_jit():
  net = bridge.to_linen(Net)
  variables = net.init(
    {'params': jax.random.key(0), 'dropout': jax.random.key(1)}, X
  )

  @jax.jit
  def run(variables, x, key):
    return net.apply(
      variables, x, rngs={'dropout': key}, mutable=['batch_stats']
    )

  y, _ = run(variables, X, jax.random.key(2))
  close(y, NET_Y)


@pytest.mark.usefixtures('no_eager_sharding')
def test_variable_metadata_is_boxed_in_nnxmeta():
  init = nnx.with_metadata(
    nnx.initializers.lecun_normal(), out_sharding=('in', 'out')
  )
  model = bridge.to_linen(NLinear, 3, 2, kernel_init=init)
  variables = model.init(jax.random.key(0), X)
  kernel = variables['params']['kernel']
  assert isinstance(kernel, bridge.NNXMeta)
  assert kernel.var_type is nnx.Param
  assert kernel.metadata['out_sharding'] == ('in', 'out')
  assert kernel.get_partition_spec() == jax.sharding.PartitionSpec('in', 'out')
  assert not isinstance(variables['params']['bias'], meta.AxisMetadata)
  close(nn.unbox(variables)['params']['kernel'], KERNEL)
  close(model.apply(variables, X), Y)


@pytest.mark.usefixtures('no_eager_sharding')
def test_bridge_with_partitioning_gives_linen_partitioned():
  init = bridge.with_partitioning(
    nnx.initializers.lecun_normal(), ('in', 'out')
  )
  model = bridge.to_linen(NLinear, 3, 2, kernel_init=init)
  variables = model.init(jax.random.key(0), X)
  kernel = variables['params']['kernel']
  assert type(kernel) is meta.Partitioned
  assert kernel.names == ('in', 'out')
  close(kernel.value, KERNEL)
  close(model.apply(variables, X), Y)


def test_metadata_fn_none_stores_bare_values():
  init = nnx.with_metadata(nnx.initializers.lecun_normal(), foo=1)
  model = bridge.to_linen(NLinear, 3, 2, kernel_init=init, metadata_fn=None)
  variables = model.init(jax.random.key(0), X)
  assert not isinstance(variables['params']['kernel'], meta.AxisMetadata)
  close(variables['params']['kernel'], KERNEL)


class Mixed(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = bridge.to_linen(NLinear, 3, 4, name='inner')(x)
    x = nn.relu(x)
    return bridge.ToLinen(NLinear, args=(4, 2))(x)


def test_nesting_to_linen_in_linen_in_to_nnx():
  outer = bridge.ToNNX(Mixed(), rngs=nnx.Rngs(0))
  bridge.lazy_init(outer, X)
  paths = sorted(
    '/'.join(map(str, path))
    for path, _ in nnx.state(outer, nnx.Param).flat_state()
  )
  assert paths == [
    'ToLinen_0/bias',
    'ToLinen_0/kernel',
    'inner/bias',
    'inner/kernel',
  ]
  close(outer(X), [[-0.045904, 0.146558], [-0.060419, 0.048292]])
  close(
    outer.inner['kernel'][...][0], [0.153772, -0.188713, -0.932088, -0.306201]
  )


class Cell(nnx.Module):
  def __init__(self, *, rngs):
    self.lin = NLinear(3, 3, rngs=rngs)

  def __call__(self, c, x):
    c = jnp.tanh(self.lin(c) + x)
    return c, c


def test_under_nn_scan():
  scan = nn.scan(
    bridge.ToLinen,
    variable_broadcast='params',
    split_rngs={'params': False},
    in_axes=0,
    out_axes=0,
  )(Cell)
  c0 = jnp.zeros((2, 3))
  xs = jnp.arange(18.0).reshape(3, 2, 3) / 18
  variables = scan.init(jax.random.key(0), c0, xs)
  assert shapes(variables) == {
    'params': {'lin': {'bias': (3,), 'kernel': (3, 3)}}
  }
  c, ys = scan.apply(variables, c0, xs)
  assert ys.shape == (3, 2, 3)
  close(c, [[0.87093, 0.408288, 0.826782], [0.951962, 0.391866, 0.89681]])


def test_current_linen_module():
  seen = []

  class Probe(nnx.Module):
    def __init__(self, rngs):
      pass

    def __call__(self, x):
      seen.append(bridge.wrappers.current_linen_module())
      return x

  assert bridge.wrappers.current_linen_module() is None
  model = bridge.to_linen(Probe, name='probe')
  model.init(jax.random.key(0), X)
  assert isinstance(seen[0], bridge.ToLinen)
  assert seen[0].name == 'probe'
  assert bridge.wrappers.current_linen_module() is None


def test_linen_rngs_dict():
  got = {}

  class Probe(nn.Module):
    @nn.compact
    def __call__(self, x):
      got['plain'] = bridge.wrappers.linen_rngs_dict(self)
      got['default'] = bridge.wrappers.linen_rngs_dict(self, add_default=True)
      return x

  Probe().init({'params': jax.random.key(0), 'dropout': jax.random.key(1)}, X)
  assert list(got['plain']) == ['params', 'dropout']
  assert list(got['default']) == ['params', 'dropout', 'default']
  assert got['default']['default'] == 0
  with pytest.raises(ValueError, match='bound'):
    bridge.wrappers.linen_rngs_dict(Probe())


def test_to_linen_class():
  base = bridge.wrappers.to_linen_class(NLinear, din=3)
  assert issubclass(base, bridge.ToLinen)
  direct = base(NLinear, args=(3, 2))
  assert direct.nnx_class is NLinear

  class LinenLinear(base):
    pass

  model = LinenLinear(dout=2, name='lin')
  assert model.nnx_class is NLinear
  assert model.kwargs == FrozenDict({'din': 3, 'dout': 2})
  assert model.name == 'lin'
  variables = model.init(jax.random.key(0), X)
  close(variables['params']['kernel'], KERNEL)


def test_functional():
  f = bridge.functional(NLinear)(3, 2)
  assert isinstance(f, bridge.Functional)
  assert f.graphdef is None
  assert f.args == (3, 2)
  with pytest.raises(ValueError, match='init'):
    f.apply(nnx.State({}))
  state = f.init(rngs=nnx.Rngs(0))
  assert sorted(state) == ['bias', 'kernel']
  y, (graphdef, new_state) = f.apply(state)(X)
  assert y.shape == (2, 2)
  assert graphdef == f.graphdef


def test_sow_inside_to_linen_warns():
  model = bridge.to_linen(Net)
  with pytest.warns(DeprecationWarning, match="outside of 'nnx.capture"):
    model.init({'params': jax.random.key(0), 'dropout': jax.random.key(1)}, X)


def test_nnx_methods_as_attributes_of_the_wrapper():
  class Holder(nn.Module):
    def setup(self):
      self.lin = bridge.to_linen(NLinear, 3, 2)

    def __call__(self, x):
      return self.lin(x)

    def doubled(self, x):
      return self.lin.double(x)

  variables = Holder().init(jax.random.key(0), X)
  y = Holder().apply(variables, X)
  close(Holder().apply(variables, X, method='doubled'), 2 * y)
  lin = bridge.to_linen(NLinear, 3, 2)
  assert lin.double.keywords == {'nnx_method': NLinear.double}
  # not a method of the NNX class (an instance attribute, a hook name)
  for name in ('kernel', 'missing', '__deepcopy__'):
    with pytest.raises(
      AttributeError, match=f"'ToLinen' object has no attribute '{name}'"
    ):
      getattr(lin, name)

  class WithSetup(bridge.ToLinen):
    def setup(self):
      self.offset = 1.0

    def shifted(self, x):
      return self(x) + self.offset

  inner = {'params': variables['params']['lin']}
  shifted = WithSetup(NLinear, (3, 2)).apply(inner, X, method='shifted')
  close(shifted, y + 1.0)
