"""nnx.state saved with msgpack bytes restores into a fresh model."""

import jax.numpy as jnp
import report
from flax import nnx, serialization

model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
if report.phase() == 'write':
  trained = nnx.Linear(3, 2, rngs=nnx.Rngs(5))
  pure = nnx.to_pure_dict(nnx.state(trained))
  with open('state.msgpack', 'wb') as f:
    f.write(serialization.msgpack_serialize(pure))
  report.value('saved', True)
else:
  with open('state.msgpack', 'rb') as f:
    restored = serialization.msgpack_restore(f.read())
  state = nnx.state(model)
  nnx.replace_by_pure_dict(state, restored)
  nnx.update(model, state)
  report.tree('restored', nnx.state(model))
  report.array('y', model(jnp.ones((1, 3))))
