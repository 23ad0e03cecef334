"""bridge.Module subclasses are dataclasses; ToNNX runs other Linen methods
and takes the collections a bridge apply() makes mutable; NNX sharding
metadata converted for Linen gives PartitionSpecs."""

import dataclasses
import inspect

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge

x = jnp.ones((1, 2))


class Lin(bridge.Module):
  dout: int
  use_bias: bool = True

  @bridge.compact
  def __call__(self, x):
    y = x @ self.param('w', nnx.initializers.ones, (x.shape[-1], self.dout))
    if self.use_bias:
      y = y + self.param('b', nnx.initializers.zeros, (1, self.dout))
    return y


report.value('field', Lin(3).dout)
report.value('default', Lin(3).use_bias)
report.value('keyword', Lin(dout=3, use_bias=False).use_bias)
report.value('is_dataclass', dataclasses.is_dataclass(Lin))
report.value('fields', [f.name for f in dataclasses.fields(Lin)])
report.value('signature', str(inspect.signature(Lin.__init__)))
report.text('repr', repr(Lin(3)))
report.value('eq', Lin(3) == Lin(3))
report.value('ne', Lin(3) == Lin(4))
report.value('hash by identity', hash(Lin(3)) == hash(Lin(3)))
report.value('replace', dataclasses.replace(Lin(3), dout=5).dout)
with report.raises('missing field'):
  Lin()
with report.raises('name outside compact'):
  Lin(3, name='x')
with report.raises('parent argument'):
  Lin(3, parent=None)
variables = Lin(3).init(0, x)
report.tree('init', variables)
report.array('apply', Lin(3).apply(variables, x))


class Outer(bridge.Module):
  width: int = 4

  @bridge.compact
  def __call__(self, x):
    return Lin(self.width, name='inner')(Lin(2)(x))


report.tree('outer init', Outer().init(0, x))
report.text('outer repr', repr(Outer()))


class Sub(Lin):
  extra: str = 'e'


report.value('subclass fields', [f.name for f in dataclasses.fields(Sub)])
report.value('subclass values', [Sub(3).dout, Sub(3, False, 'z').extra])


class Factory(bridge.Module):
  items: list = dataclasses.field(default_factory=list)


report.value('default_factory', Factory().items)


class PostInit(bridge.Module):
  dout: int

  def __post_init__(self):
    self.double = 2 * self.dout


report.value('__post_init__', PostInit(3).double)


class Custom(bridge.Module):
  def __init__(self, a):
    self.a = a


report.value('own __init__ kept', Custom(2).a)
report.value('own __init__ eq', Custom(1) == Custom(2))


class Dot(bridge.Module):
  def __init__(self, din, dout, *, rngs):
    self.lin = nnx.Linear(din, dout, rngs=rngs)

  def __call__(self, x):
    return self.lin(x)


dot = Dot(2, 3, rngs=nnx.Rngs(0))
report.tree('nnx submodule outside compact init', dot.init(0, x))
report.array(
  'nnx submodule outside compact apply', dot.apply(dot.init(0, x), x)
)


class LinenCounter(nn.Module):
  @nn.compact
  def __call__(self, x):
    y = nn.Dense(3)(x)
    self.sow('intermediates', 'h', y)
    count = self.variable('counter', 'n', lambda: jnp.zeros(()))
    if not self.is_initializing():
      count.value += 1
    return y

  def double(self, x):
    return 2 * self(x)


class Top(bridge.Module):
  @bridge.compact
  def __call__(self, x):
    return bridge.linen_in_bridge_mdl(LinenCounter())(x)


variables = Top().init(0, x)
report.tree('linen child init', variables)
with report.raises('linen child, collection not mutable'):
  Top().apply(variables, x)
report.tree(
  'linen child mutable counter',
  Top().apply(variables, x, mutable=['counter'])[1]['counter'],
)
report.tree(
  'linen child mutable True', Top().apply(variables, x, mutable=True)[1]
)

wrapped = bridge.ToNNX(LinenCounter(), rngs=nnx.Rngs(0))
bridge.lazy_init(wrapped, x)
report.array(
  'ToNNX other method', wrapped.double(x, mutable=['counter', 'intermediates'])
)
with report.raises('ToNNX missing attribute'):
  wrapped.nope


class Sharded(nnx.Module):
  def __init__(self, rngs):
    self.w = nnx.Param(
      jnp.ones((2, 3)), sharding_names=('a', 'b'), eager_sharding=False
    )
    self.u = nnx.Param(jnp.ones((2, 3)), tag='x')

  def __call__(self, x):
    return x @ self.w


variables = bridge.ToLinen(Sharded).init(jax.random.key(0), x)
report.value('ToLinen box type', type(variables['params']['w']).__name__)
report.value(
  'ToLinen partition specs',
  jax.tree.map(str, nn.get_partition_spec(variables)),
)
report.tree('ToLinen unboxed', nn.unbox(variables))
