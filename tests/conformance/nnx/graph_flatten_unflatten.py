"""nnx.flatten (with and without paths) and nnx.unflatten from a FlatState,
a State or a list of raw leaves, with copy_variables."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = nnx.BatchStat(jnp.zeros(1))
    self.c = 3


m = M()
gd, fs = nnx.flatten(m)
report.value('flat', [type(fs).__name__, [list(p) for p in fs.paths]])
report.value('graphdef', type(gd).__name__)
_, leaves = nnx.flatten(m, with_paths=False)
report.value(
  'leaves', [type(leaves).__name__, len(leaves), type(leaves[0]).__name__]
)
m2 = nnx.unflatten(gd, fs)
report.value('from-flat', [type(m2).__name__, m2.a is m.a, m2.c])
report.value('from-state', nnx.unflatten(gd, nnx.state(m)).a is m.a)
m4 = nnx.unflatten(gd, leaves)
report.value('from-leaves', [m4.a is m.a, type(m4.a).__name__])
report.array('from-leaves-value', m4.a[...])
report.value('copy', nnx.unflatten(gd, fs, copy_variables=True).a is m.a)
