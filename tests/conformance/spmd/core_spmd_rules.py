"""flax.core.spmd: per-thread logical axis rules and pspec helpers."""

import threading

import jax
import jax.numpy as jnp
import report
from flax.core import spmd

out = []
spmd.set_logical_axis_rules([('g', 'G')])
with spmd.logical_axis_rules([('a', 'b')]):
  t = threading.Thread(target=lambda: out.append(spmd.get_logical_axis_rules()))
  t.start()
  t.join()
  out.append(spmd.get_logical_axis_rules())
out.append(spmd.get_logical_axis_rules())
report.text('rules seen', repr(out))
report.text(
  'composite',
  repr(
    spmd.composite_rules([('b', 'x'), ('a', 'y')], [('a', 'y'), ('c', 'X')])
  ),
)
with report.raises('inconsistent'):
  spmd.composite_rules([('a', 'x')], [('a', 'X')])
report.text(
  'from rules',
  repr(
    spmd.from_sharding_rules(
      ('a', 'b', None, ('a', 'b')), (('a', 'X'), ('b', ('Y', 'Z')))
    )
  ),
)
with report.raises('pspec rules conflict'):
  spmd.get_pspec(('a',), [('a', 'X'), ('a', 'Y')])
report.text('pspec', repr(spmd.get_pspec(('a', 'g'), [('a', 'X')])))
report.text('map', repr(spmd.map_sharding(lambda x: f'{x}!', ('a', None))))
mesh = jax.make_mesh((2, 4), ('X', 'Y'))
x = spmd.shard_value(
  jnp.ones((4, 8)), ('a', 'b'), [('a', 'X'), ('b', 'Y')], mesh
)
report.text('sharding', repr(x.sharding.spec))
with report.raises('no mesh'):
  spmd.shard_value(jnp.ones((4, 8)), ('a', 'b'), [('a', 'X')], None)
