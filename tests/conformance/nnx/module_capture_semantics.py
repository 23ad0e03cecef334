"""nnx.capture: one State per Variable type (first match wins), Modules of
the first positional argument only, the Modules left as they are, init
seeding sows and perturbations, gradients w.r.t. perturbations,
method_outputs, nested captures; gradients of Variable roots."""

import warnings

import jax
import jax.numpy as jnp
import report
from flax import nnx

warnings.simplefilter('ignore', DeprecationWarning)


class Sub(nnx.Module):
  def __call__(self, x):
    self.sow(nnx.Intermediate, 'h', x * 3)
    return x


class Model(nnx.Module):
  def __init__(self):
    self.sub = Sub()

  def __call__(self, x):
    self.sow(nnx.Intermediate, 'i', x)
    self.sow(nnx.Intermediate, 'i', x + 1)
    self.sow(
      nnx.Intermediate, 's', x, reduce_fn=lambda a, b: a + b, init_fn=lambda: 0
    )
    x = self.sub(x)
    return self.perturb('p', x)


m = Model()
x = jnp.ones(2)
out, inter = nnx.capture(m, nnx.Intermediate)(x)
report.array('out', out)
report.tree('intermediates', inter)
report.value('module-untouched', [hasattr(m, 'i'), hasattr(m, 'p')])
r = nnx.capture(m, nnx.Intermediate, nnx.Perturbation)(x)
report.value('two-types-len', len(r))
report.tree('two-types-first', r[1])
report.tree('two-types-second', r[2])
_, perts = nnx.capture(m, nnx.Perturbation)(x)
report.tree('perturbations', perts)
report.array('no-types', nnx.capture(m)(x))
init = nnx.State({'i': nnx.Intermediate((jnp.zeros(2),))})
report.tree('init-sow', nnx.capture(m, nnx.Intermediate, init=init)(x)[1])
p5 = nnx.State({'p': nnx.Perturbation(jnp.full(2, 5.0))})
report.tree('init-perturb', nnx.capture(m, nnx.Perturbation, init=p5)(x))


def loss(p, m, x):
  y, _ = nnx.capture(m, nnx.Perturbation, init=p)(x)
  return (y * y).sum()


report.tree('grad-perturbations', nnx.grad(loss)(perts, m, jnp.full(2, 2.0)))
report.tree(
  'method-outputs',
  nnx.capture(m, nnx.Intermediate, method_outputs=nnx.Intermediate)(x)[1],
)
report.value(
  'method-outputs-other-type',
  [
    sorted(s)
    for s in nnx.capture(m, nnx.Perturbation, method_outputs=nnx.Intermediate)(
      x
    )[1:]
  ],
)
m1, m2 = Model(), Model()
report.tree(
  'list-root',
  nnx.capture(lambda ms, x: ms[0](x) + ms[1](x), nnx.Intermediate)([m1, m2], x)[
    1
  ],
)
report.tree(
  'second-arg-not-captured',
  nnx.capture(lambda x, m: m(x), nnx.Intermediate)(x, m1)[1],
)
report.value('second-arg-sows-attribute', hasattr(m1, 'i'))


def nest(m, x):
  y, inner = nnx.capture(m, nnx.Intermediate)(x)
  m(x)
  return y


report.tree('nested-outer', nnx.capture(nest, nnx.Intermediate)(m2, x)[1])
report.value('nested-then-attribute', hasattr(m2, 'i'))

v = nnx.BatchStat(jnp.ones(2))
report.tree('grad-variable-root', nnx.grad(lambda v: (v[...] * 3).sum())(v))
report.tree(
  'grad-state-of-variables',
  nnx.grad(lambda s: (s['x'][...] * 3 + s['y'][...]).sum())(
    nnx.State({'x': nnx.BatchStat(jnp.ones(2)), 'y': nnx.Param(jnp.ones(2))})
  ),
)
report.tree(
  'grad-shared-variable',
  nnx.grad(lambda vs: (vs[0][...] * vs[1][...]).sum())([v, v]),
)
report.tree(
  'grad-variable-filtered',
  nnx.grad(lambda v: (v[...] * 3).sum(), argnums=nnx.DiffState(0, nnx.Param))(
    v
  ),
)
report.tree(
  'grad-dict-of-variables',
  jax.tree.map(
    lambda a: a, nnx.grad(lambda d: (d['x'][...] * 3).sum())({'x': v})
  ),
)

forward = nnx.jit(lambda m, x: m(x))
report.tree(
  'through-jit', nnx.capture(forward, nnx.Intermediate)(Model(), x)[1]
)
