"""to_state_dict / from_state_dict on dataclasses, lists, tuples, dicts."""

import jax.numpy as jnp
import report
from flax import serialization, struct


@struct.dataclass
class Box:
  a: jnp.ndarray
  b: list


box = Box(jnp.ones(2), [jnp.zeros(1), (3, 4)])
sd = serialization.to_state_dict(box)
report.tree('state-dict', sd)
restored = serialization.from_state_dict(
  box, {'a': jnp.zeros(2), 'b': {'0': jnp.ones(1), '1': {'0': 5, '1': 6}}}
)
report.tree('restored', restored)
with report.raises('missing field'):
  serialization.from_state_dict(box, {'a': jnp.zeros(2)})
