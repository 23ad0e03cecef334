"""Public helper classes of flax.nnx.transforms.iteration / .transforms:
Broadcasted, PytreeDeque, labeled, ValueMetadata, DelayedAccessor,
CallableProxy and a LiftedModule subclass."""

import dataclasses

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx.transforms import iteration as it
from flax.nnx.transforms import transforms as tr

b = it.Broadcasted(jnp.ones(2))
report.text('broadcasted-repr', repr(b))
report.text('broadcasted-treedef', str(jax.tree.structure(b)))
report.text(
  'broadcasted-paths',
  str(jax.tree_util.tree_flatten_with_path(it.Broadcasted(5))),
)
report.text('broadcasted-replace', repr(b.replace(data=3)))
with report.raises('broadcasted-frozen'):
  b.data = 3

d = it.PytreeDeque([1, jnp.ones(2)])
report.text('deque-repr', repr(d))
report.text('deque-treedef', str(jax.tree.structure(d)))
report.text('deque-map', repr(jax.tree.map(lambda x: x * 2, d)))
report.text(
  'deque-paths',
  str(jax.tree_util.tree_flatten_with_path(it.PytreeDeque([5, 6]))),
)
report.value(
  'deque-maxlen',
  [
    it.PytreeDeque([1, 2, 3], 2).maxlen,
    jax.tree.map(lambda x: x, it.PytreeDeque([1], 2)).maxlen,
  ],
)

lt = it.labeled(a=1, b=jnp.ones(2))
report.text('labeled-repr', repr(it.labeled(b=2, a=1)))
report.value(
  'labeled', [lt.a, lt[0], len(lt), list(lt._fields), it.labeled(x=1) == (1,)]
)
report.value('labeled-same', tr.labeled is it.labeled)
with report.raises('labeled-positional'):
  it.labeled(1)

v = tr.ValueMetadata(nnx.Param, jnp.ones(2), {'x': 1})
report.text('value-metadata-repr', repr(v))
report.text('value-metadata-treedef', str(jax.tree.structure(v)))
report.text('value-metadata-map', repr(jax.tree.map(lambda x: x + 1, v)))
report.value(
  'value-metadata-eq',
  tr.ValueMetadata(nnx.Param, 1, {}) == tr.ValueMetadata(nnx.Param, 1, {}),
)
with report.raises('value-metadata-hash'):
  hash(tr.ValueMetadata(nnx.Param, 1, {}))
with report.raises('value-metadata-frozen'):
  v.value = 3
report.value(
  'value-metadata-fields',
  [f.name for f in dataclasses.fields(tr.ValueMetadata)],
)

acc = tr.DelayedAccessor().foo[0].bar
report.text('accessor-repr', repr(acc))
report.value('accessor-call', tr.DelayedAccessor()['k']({'k': 5}))
report.value('accessor-eq', tr.DelayedAccessor() == tr.DelayedAccessor())
with report.raises('accessor-missing'):
  tr.DelayedAccessor().a(object())
cp = tr.CallableProxy(lambda acc, *a, **k: (repr(acc), a, k))
report.value('proxy-call', list(cp.foo[0].bar(3, z=1)))
cp2 = tr.CallableProxy(lambda acc, *a: repr(acc), tr.DelayedAccessor()['q'])
report.text('proxy-start', cp2.x(1))


class Bad(tr.LiftedModule):
  pass


with report.raises('lifted-abstract'):
  Bad()


class Inner(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))

  def __call__(self, x):
    return self.w * x

  def double(self, x):
    return 2 * self.w * x


seen = []


class Wrap(tr.LiftedModule):
  def __init__(self, m):
    self.m = m

  @property
  def _submodule(self):
    return self.m

  def _call(self, accessor, *args, **kwargs):
    seen.append(repr(accessor))
    return accessor(self.m)(*args, **kwargs)


w = Wrap(Inner())
report.array('lifted-call', w(1.0))
report.array('lifted-call-proxy', w.call(2.0))
report.array('lifted-method', w.call.double(x=3.0))
report.value('lifted-accessors', seen)
report.tree('lifted-state', nnx.state(w))
report.value('lifted-is-module', isinstance(w, nnx.Module))
report.text('lifted-generic', repr(tr.LiftedModule[int]))
