"""msgpack: scalars, complex, bfloat16, empty containers, big arrays."""

import jax.numpy as jnp
import numpy as np
import report
from flax import serialization

state = {
  'c': jnp.array([1 + 2j, 3 - 1j], dtype=jnp.complex64),
  'bf16': jnp.arange(4, dtype=jnp.bfloat16),
  'scalar': np.float32(2.5),
  'empty': {},
  'none': None,
  'i8': np.arange(3, dtype=np.int8),
  'big': np.arange(300000, dtype=np.float32),
}
data = serialization.msgpack_serialize(state)
report.text('bytes-head', data[:200].hex())
report.value('length', len(data))
back = serialization.msgpack_restore(data)
report.tree('restored', back)
with report.raises('garbage'):
  serialization.msgpack_restore(b'\xc1\xc1\xc1')
