"""VariableMeta: the metaclass of Variable types; subclasses are pytrees
with their metadata, built-in types registered under Linen names."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import variablelib


class Count(nnx.Variable):
  pass


class Stat(nnx.BatchStat):
  pass


report.value(
  'metaclass',
  [
    type(nnx.Variable) is variablelib.VariableMeta,
    type(nnx.Param) is variablelib.VariableMeta,
    type(Count) is variablelib.VariableMeta,
    [b.__name__ for b in variablelib.VariableMeta.__bases__],
  ],
)
s = Stat(jnp.ones(2), tag='x')
leaves, treedef = jax.tree.flatten(s)
report.value('leaves', len(leaves))
report.text('treedef', repr(treedef))
back = jax.tree.unflatten(treedef, [jnp.zeros(2)])
report.value('unflatten', [type(back).__name__, back.tag])
report.array('unflatten-value', back[...])
report.value(
  'names',
  [
    variablelib.variable_name_from_type(nnx.Param),
    variablelib.variable_type_from_name('batch_stats').__name__,
    variablelib.variable_name_from_type(Count, allow_register=True),
  ],
)
with report.raises('unregistered-name'):
  variablelib.variable_type_from_name('nope')
