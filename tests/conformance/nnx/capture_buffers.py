"""``__captures__`` while an nnx.capture runs: a tuple of one Variable per
type asked for (then per other type ``init`` gives values of), each a dict
of what was recorded; its type, length, contents and repr; records going
to the buffer of exactly their type; sow's return value; nested captures;
a call that raises; method_outputs."""

import warnings

import jax
import jax.numpy as jnp
import report
from flax import nnx

warnings.simplefilter('ignore', DeprecationWarning)


class MyIntermediate(nnx.Intermediate):
  pass


class Inner(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(1))
    self.log = nnx.static([])

  def __call__(self, x):
    caps = getattr(self, '__captures__', None)
    self.log.append(f'before: {type(caps).__name__} {len(caps)}')
    self.log.append(repr(caps))
    x = self.perturb('p', x)
    returned = [
      self.sow(nnx.Intermediate, 'i', x),
      self.sow(MyIntermediate, 'mine', x),
      self.sow(nnx.Param, 'param', x),
      self.sow('intermediates', 'named', x),
    ]
    self.log.append(f'sow returned {returned}')
    self.log.append('after: ' + repr(caps))
    return x


class Outer(nnx.Module):
  def __init__(self):
    self.inner = Inner()

  def __call__(self, x):
    return self.inner(x) * 2


def run(label, *types, **kwargs):
  m = Outer()
  result = nnx.capture(m, *types, **kwargs)(jnp.ones(2))
  report.text(f'{label}-log', '\n'.join(m.inner.log))
  outs = result[1:] if types else ()
  for k, state in enumerate(outs):
    report.text(f'{label}-state-{k}', repr(state))
  report.value(f'{label}-left', hasattr(m.inner, '__captures__'))
  return outs


run('perturbation', nnx.Perturbation)
run('both', nnx.Perturbation, nnx.Intermediate)
run('intermediate-first', nnx.Intermediate, nnx.Perturbation)
run('twice', nnx.Intermediate, nnx.Intermediate)
run('none')
run('subclass', MyIntermediate)
run('param', nnx.Param)
(perts,) = run('for-init', nnx.Perturbation)
perts = jax.tree.map(lambda a: a + 5, perts)
run('init-only', init=perts)
run('init-and-intermediate', nnx.Intermediate, init=perts)
run('init-and-perturbation', nnx.Perturbation, init=perts)
inits = nnx.State(
  {'inner': {'p': nnx.Perturbation(jnp.ones(2)), 'i': nnx.Intermediate((1.0,))}}
)
run('init-two-types', init=inits)
run('init-raw-values', nnx.Intermediate, init={'inner': {'p': jnp.ones(2)}})


class Nest(nnx.Module):
  def __init__(self):
    self.inner = Inner()
    self.log = nnx.static([])

  def __call__(self, x):
    self.log.append(repr(self.__captures__))
    y, p = nnx.capture(self.inner, nnx.Perturbation)(x)
    self.log.append(repr(p))
    self.log.append(str(hasattr(self.inner, '__captures__')))
    self.log.append(repr(self.__captures__))
    return y


n = Nest()
_, inter = nnx.capture(n, nnx.Intermediate)(jnp.ones(2))
report.text('nested-log', '\n'.join(n.log))
report.text('nested-state', repr(inter))


class Raises(nnx.Module):
  def __call__(self, x):
    self.sow(nnx.Intermediate, 'i', x)
    raise ValueError('boom')


r = Raises()
with report.raises('raises'):
  nnx.capture(r, nnx.Intermediate)(jnp.ones(1))
report.text('raises-left', repr(getattr(r, '__captures__', None)))


class Base(nnx.Module):
  def base_method(self, x):
    return x * 10


class Leaf(Base):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(1))

  def __call__(self, x):
    self.sow(nnx.Intermediate, 's', x)
    return self.process(x) + self._private(x) + self.base_method(x)

  def process(self, x):
    return x * 2

  def _private(self, x):
    return x * 3

  @property
  def prop(self):
    return 7.0


class Tree(nnx.Module):
  def __init__(self):
    self.leaf = Leaf()
    self.lin = nnx.Linear(1, 1, rngs=nnx.Rngs(0))

  def __call__(self, x):
    y = self.leaf(x) + self.leaf.prop + self.lin(x)
    return self.run(y) + self.run(y)

  def run(self, y):
    return y + 1


t = Tree()
for label, types, outputs in [
  ('method-outputs', (nnx.Intermediate,), nnx.Intermediate),
  ('method-outputs-other-capture', (nnx.Perturbation,), nnx.Intermediate),
  ('method-outputs-other-type', (nnx.Intermediate,), nnx.Perturbation),
]:
  _, state = nnx.capture(t, *types, method_outputs=outputs)(jnp.ones(1))
  report.tree(label, state)
_, state = nnx.capture(
  t.run, nnx.Intermediate, method_outputs=nnx.Intermediate
)(jnp.ones(1))
report.tree('method-outputs-bound-method', state)
report.value(
  'method-outputs-classes-restored',
  [
    type(t).__call__.__name__,
    type(t.leaf).process.__name__,
    type(t.leaf).__name__,
  ],
)


other = Leaf()


class WithOther(nnx.Module):
  def __init__(self):
    self.leaf = Leaf()

  def __call__(self, x):
    return self.leaf(x) + other(x)


with report.raises('method-outputs-outside-instance'):
  nnx.capture(WithOther(), nnx.Intermediate, method_outputs=nnx.Intermediate)(
    jnp.ones(1)
  )
for name in ('y', 'process', 'prop'):
  with report.raises(f'sow-over-class-attribute-{name}'):
    Leaf.y = 10
    Leaf().sow(nnx.Intermediate, name, jnp.ones(1))
