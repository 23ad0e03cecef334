"""Variable API: raw values, get/set with index, metadata including the
required entries, copies and from_metadata."""

import jax.numpy as jnp
import report
from flax import nnx

v = nnx.Param(jnp.ones(3), tag='x', b=2)
report.array('raw', v.get_raw_value())
v.set_raw_value(jnp.zeros(3))
report.array('after-set-raw', v[...])
report.value('var_type', v.var_type.__name__)
report.value('shape', list(v.shape))
report.value('sharding_names', v.sharding_names)
report.value('metadata', v.get_metadata())
report.value('metadata-excl', v.get_metadata(exclude_required=True))
report.value('ref-entry', v.get_metadata('ref'))
report.array('get-index', nnx.Param(jnp.arange(4)).get_value(index=1))
w = nnx.Param(jnp.arange(4))
w.set_value(7, index=2)
report.array('set-index', w[...])
with report.printed('copy'):
  print(w.copy(jnp.ones(1), tag=3))
  print(w.replace(tag=5))
  print(type(w.to_state()).__name__)
w.update_from_state(nnx.Param(jnp.zeros(4)))
report.array('update_from_state', w[...])
with report.printed('from_metadata'):
  print(
    nnx.Param.from_metadata(jnp.ones(1), {'a': 1, 'hijax': False, 'ref': False})
  )
