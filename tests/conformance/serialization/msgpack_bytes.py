"""msgpack bytes of a nested state, and the round trip."""

import jax.numpy as jnp
import numpy as np
import report
from flax import serialization

state = {
  'params': {'kernel': jnp.arange(6.0).reshape(2, 3), 'bias': jnp.zeros(3)},
  'step': 7,
  'tokens': np.arange(4, dtype=np.int32),
  'flags': [True, False],
  'name': 'model',
}
data = serialization.to_bytes(state)
report.text('bytes', data.hex())
restored = serialization.msgpack_restore(data)
report.tree('restored', restored)
report.tree('from-bytes', serialization.from_bytes(state, data))
report.value('state-dict', serialization.to_state_dict(state)['step'])
