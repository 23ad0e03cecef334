"""clone (variables / arrays), iter_graph paths, iter_children,
graph_pop and the node predicates of graphlib."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import graphlib


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = nnx.BatchStat(jnp.ones(1))
    self.c = 1


m = M()
report.value(
  'clone', [nnx.clone(m).a is m.a, nnx.clone(m, variables=False).a is m.a]
)
report.array('clone-arrays', nnx.clone(m, arrays=True).a[...])
report.value(
  'iter-graph',
  [
    [list(map(str, p)), type(v).__name__]
    for p, v in nnx.iter_graph(m)
    if p and not str(p[0]).startswith('_')
  ],
)
report.value(
  'leaf',
  [
    graphlib.is_node_leaf(nnx.Param(1)),
    graphlib.is_node_leaf(1),
    graphlib.is_node_leaf(jnp.ones(1)),
  ],
)
report.value(
  'node-type',
  [graphlib.is_node_type(t) for t in (nnx.Module, dict, list, int, nnx.Param)],
)
report.value(
  'pytree-node',
  [
    graphlib.is_pytree_node(x)
    for x in (1, [1], {}, nnx.Module(), jnp.ones(1), nnx.Param(1))
  ],
)
report.value(
  'graph-node',
  [graphlib.is_graph_node(x) for x in (nnx.Module(), [1], nnx.Param(1), {})],
)
report.value(
  'node',
  [graphlib.is_node(x) for x in (nnx.Module(), [1], nnx.Param(1), 1, {}, (1,))],
)
path = jax.tree_util.tree_flatten_with_path({'a': [1, {'b': 2}]})[0][1][0]
report.value('jax-path', list(graphlib.jax_to_nnx_path(path)))
(popped,) = graphlib.graph_pop(m, (nnx.BatchStat,))
report.tree('popped', popped)
report.value('after-pop', hasattr(m, 'b'))
report.text('static', repr(graphlib.Static(1)))
report.value(
  'markers',
  [
    repr(x)
    for x in (
      graphlib.NODE_ATTR,
      graphlib.LEAF_ATTR,
      graphlib.REPEATED,
      graphlib.NO_UPDATE,
    )
  ],
)
report.value(
  'elems', [repr(graphlib.DataElem(1)), repr(graphlib.StaticElem(2))]
)
report.value(
  'impls',
  [
    type(graphlib.get_node_impl([1])).__name__,
    type(graphlib.get_node_impl(m)).__name__,
    graphlib.get_node_impl(1) is None,
  ],
)
