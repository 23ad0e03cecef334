"""Module.parent as a ParentDescriptor (weak parent links) and TestScope."""

import copy
import gc
import pickle

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax.core.scope import Scope
from flax.linen import module as linen_module


class Scale(nn.Module):
  f: int = 2

  @nn.compact
  def __call__(self, x):
    return x * self.f


report.text('descriptor type', type(nn.Dense.__dict__['parent']).__name__)
report.text('descriptor module', type(Scale.__dict__['parent']).__module__)
report.value('class read', nn.Dense.parent is None)
report.value('Module has parent', hasattr(nn.Module, 'parent'))
report.value('unbound vars', sorted(vars(Scale())))
report.value('unbound ref', repr(vars(Scale(parent=None))['_parent_ref']))
report.text('unbound repr', repr(Scale(3)))
report.value(
  'pickled ref', repr(vars(pickle.loads(pickle.dumps(Scale())))['_parent_ref'])
)

seen = {}


class Outer(nn.Module):
  def setup(self):
    self.sub = Scale(3)

  def __call__(self, x):
    sub = self.sub
    seen['sub'] = sub
    seen['ref type'] = type(vars(sub)['_parent_ref']).__name__
    seen['own ref type'] = type(vars(self)['_parent_ref']).__name__
    seen['parent is self'] = sub.parent is self
    seen['copy'] = copy.copy(sub).parent is self
    seen['deepcopy'] = copy.deepcopy(sub).parent is self
    seen['clone ref'] = repr(vars(sub.clone())['_parent_ref'])
    return sub(x)


report.array('y', Outer().apply({}, jnp.ones(2)))
sub = seen.pop('sub')
for label, value in seen.items():
  report.value(label, value)
gc.collect()
report.value('collected parent', repr(sub.parent))

scope = Scope({}, rngs={'params': jax.random.key(0)})
report.value('scope parent kept', nn.Dense(3, parent=scope).parent is scope)

ts = linen_module.TestScope(
  {},
  rngs={'params': jax.random.key(7), 'dropout': jax.random.key(1)},
  mutable=True,
)
report.array('make_rng params', ts.make_rng('params'))
report.array('make_rng params again', ts.make_rng('params'))
report.array('make_rng dropout', ts.make_rng('dropout'))
report.array('make_rng missing', ts.make_rng('missing'))
report.value('counters', ts.rng_counters)
report.array('param', ts.param('w', jax.random.normal, (3,)))
report.array('zeros', ts.param('z', nn.initializers.zeros_init(), (3,)))
report.text('child type', type(ts.push('child')).__name__)
dense = nn.Dense(2, parent=linen_module.TestScope({}, rngs={}, mutable=True))
report.array('dense', dense(jnp.ones((1, 3))))
report.tree('dense variables', dense.variables)
