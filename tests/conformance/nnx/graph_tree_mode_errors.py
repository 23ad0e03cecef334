"""Tree-mode (graph=False) error texts: cycles and shared Variables in
iter_graph / recursive_map / split, pytree=False objects; a leaf root's
FlatState merges back; Variable() without a value."""

import jax.numpy as jnp
import report
from flax import nnx


class Foo(nnx.Pytree):
  def __init__(self, value):
    self.a = nnx.data(value)


class Opaque(nnx.Pytree, pytree=False):
  pass


a = nnx.List([1])
b = nnx.List([2, a])
a.append(b)
v = nnx.Param(jnp.ones(1))
shared = Foo([v, {'x': v}])
holder = Foo(Opaque())
cases = [
  ('cycle iter_graph', lambda: list(nnx.iter_graph(a, graph=False))),
  (
    'cycle recursive_map',
    lambda: nnx.recursive_map(lambda p, x: x, a, graph=False),
  ),
  ('shared iter_graph', lambda: list(nnx.iter_graph(shared, graph=False))),
  ('shared split', lambda: nnx.split(shared, graph=False)),
  ('shared state', lambda: nnx.state(shared, graph=False)),
  (
    'pytree=False iter_graph',
    lambda: list(nnx.iter_graph(holder, graph=False)),
  ),
  ('pytree=False split', lambda: nnx.split(holder, graph=False)),
]
for label, fn in cases:
  with report.raises(label):
    fn()
  try:
    fn()
  except ValueError as e:
    report.text(f'{label} message', str(e))
report.value(
  'iter_children', [k for k, _ in nnx.iter_children(holder, graph=False)]
)
report.value(
  'iter_children cycle', len(list(nnx.iter_children(a, graph=False)))
)
x = jnp.array(1.0)
for graph in (True, False):
  graphdef, flat_state = nnx.graphlib.flatten(x, graph=graph)
  report.value(f'leaf root graph={graph}', nnx.merge(graphdef, flat_state) is x)
with report.raises('Param()'):
  nnx.Param()
try:
  nnx.Param()
except TypeError as e:
  report.text('Param() message', str(e))
w = nnx.Param(jnp.ones(1))
w.set_value(nnx.Param(jnp.zeros(1)))
report.value('set_value(Variable)', type(w.get_raw_value()).__name__)
