"""nnx.view / view_info / with_attributes on layers with set_view, and
nnx.capture of sown intermediates."""

import jax.numpy as jnp
import report
from flax import nnx


class Block(nnx.Module):
  def __init__(self, rngs):
    self.linear = nnx.Linear(2, 3, rngs=rngs)
    self.dropout = nnx.Dropout(0.5, rngs=rngs)
    self.bn = nnx.BatchNorm(3, rngs=rngs)


b = Block(nnx.Rngs(0))
with report.printed('view_info'):
  print(nnx.view_info(b))
v = nnx.view(b, deterministic=True, use_running_average=True)
report.value(
  'view',
  [
    v is b,
    v.dropout.deterministic,
    b.dropout.deterministic,
    v.linear.kernel is b.linear.kernel,
    v.bn.use_running_average,
  ],
)
with report.raises('view-unused'):
  nnx.view(b, foo=1)
report.value(
  'view-only',
  nnx.view(b, only=nnx.Dropout, deterministic=True).bn.use_running_average,
)
w = nnx.with_attributes(b, deterministic=True)
report.value(
  'with_attributes', [w is b, w.dropout.deterministic, b.dropout.deterministic]
)
with report.raises('with_attributes-missing'):
  nnx.with_attributes(b, zzz=1)


class Scale(nnx.Module):
  def __init__(self, k):
    self.k = nnx.Param(jnp.full((2,), k))

  def __call__(self, x):
    return x * self.k


class Model(nnx.Module):
  def __init__(self):
    self.l1 = Scale(2.0)
    self.l2 = Scale(3.0)

  def __call__(self, x):
    h = self.l1(x)
    self.sow(nnx.Intermediate, 'h', h)
    return self.l2(h)


m = Model()
x = jnp.ones((2,))
y, inter = nnx.capture(m, nnx.Intermediate)(x)
report.array('capture-y', y)
report.tree('capture-state', inter)
report.value('removed-after', hasattr(m, 'h'))
_, inter = nnx.capture(m, nnx.Intermediate, method_outputs=nnx.Intermediate)(x)
report.tree('method-outputs', inter)
y2, inter2 = nnx.capture(nnx.Intermediate)(lambda m, x: m(x))(m, x)
report.tree('decorator', inter2)
report.array('no-types', nnx.capture(m)(x))
report.value('iter_children', [k for k, _ in nnx.iter_children(m)])
report.value(
  'iter_modules-tree', [p for p, _ in nnx.iter_modules(m, graph=False)]
)
