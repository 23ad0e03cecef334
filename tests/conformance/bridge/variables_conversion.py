"""flax.nnx.bridge.variables: collection <-> Variable conversions."""

import flax
import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.core import meta
from flax.nnx.bridge import variables as bv

flax.config.update('flax_always_shard_variable', False)
x = jnp.arange(3.0)
report.value('params', type(bv.to_nnx_var('params', x)).__name__)
report.value('batch_stats', type(bv.to_nnx_var('batch_stats', x)).__name__)
report.value('cache', type(bv.to_nnx_var('cache', x)).__name__)
report.value('intermediates', type(bv.to_nnx_var('intermediates', x)).__name__)
report.value('new collection', type(bv.to_nnx_var('my_new_col', x)).__name__)
report.value(
  'new name', nnx.variable_name_from_type(type(bv.to_nnx_var('my_new_col', x)))
)
report.value('vanilla', bv.is_vanilla_variable(nnx.Param(x)))
report.value('not vanilla', bv.is_vanilla_variable(nnx.Param(x, note='hi')))
report.array('bare', bv.to_linen_var(nnx.Param(x)))
box = bv.to_linen_var(nnx.Param(x, note='hi'))
report.value('box', type(box).__name__)
report.value('box note', box.metadata['note'])
report.value('back note', bv.to_nnx_var('params', box).note)
part = bv.to_nnx_var('params', meta.Partitioned(x, ('a',)))
report.value('partitioned sharding', list(part.out_sharding))
report.value('partitioned back', type(bv.to_linen_var(part)).__name__)
report.value('partitioned names', list(bv.to_linen_var(part).names))
attrs = bv.linen_vars_to_nnx_attrs(
  {'params': {'b': {'k': x}, 'a': x}, 'batch_stats': {'b': {'m': x}}}
)
report.value(
  'attrs',
  {
    k: sorted(v) if isinstance(v, dict) else type(v).__name__
    for k, v in attrs.items()
  },
)
report.value('attr order', list(attrs))
back = bv.nnx_attrs_to_linen_vars(attrs)
report.tree('back', back)
report.value(
  'sorted',
  [
    t.__name__
    for t in bv.sort_variable_types(
      [nnx.Intermediate, nnx.Variable, nnx.Perturbation, nnx.BatchStat]
    )
  ],
)
report.value(
  'col',
  bv.get_col_name(
    (jax.tree_util.DictKey('batch_stats'), jax.tree_util.DictKey('m'))
  ),
)
