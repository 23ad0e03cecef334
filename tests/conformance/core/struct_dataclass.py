"""flax.struct: pytree dataclasses, pytree_node=False fields, replace."""

import jax
import jax.numpy as jnp
import report
from flax import struct


@struct.dataclass
class Point:
  x: jax.Array
  y: jax.Array
  name: str = struct.field(pytree_node=False, default='p')


p = Point(jnp.ones(2), jnp.zeros(2))
leaves, treedef = jax.tree_util.tree_flatten(p)
report.value('num-leaves', len(leaves))
doubled = jax.tree_util.tree_map(lambda a: a * 2, p)
report.array('doubled-x', doubled.x)
report.value('name-kept', doubled.name)
q = p.replace(name='q')
report.value('replaced', q.name)
report.text('repr', repr(Point(1, 2)))
with report.raises('frozen'):
  p.x = 3


class Counter(struct.PyTreeNode):
  count: int
  label: str = struct.field(pytree_node=False, default='c')


c = Counter(3)
report.value('pytreenode-leaves', jax.tree_util.tree_leaves(c))
report.value('pytreenode-repr', repr(c))
