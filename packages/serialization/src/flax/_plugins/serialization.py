"""Plugin of the flax-serialization distribution.

It registers the built-in ``msgpack`` checkpoint backend and the state-dict
handler of ``jax.tree_util.Partial`` (loaded only when such an object is
serialized). flax-nnx registers the one of ``nnx.State`` itself.
"""

from flax.plugins import Backend
from flax.plugins import StateHandler
from flax.plugins import first_party_exports
from flax.plugins import hookimpl


@hookimpl
def flax_checkpoint_backends():
  return [Backend('msgpack', 'flax.serialization:msgpack_backend', 10)]


@hookimpl
def flax_state_handlers():
  return [
    StateHandler(
      'jax.tree_util:Partial',
      'flax.serialization._handlers:partial_to_state_dict',
      'flax.serialization._handlers:partial_from_state_dict',
    ),
  ]


@hookimpl
def flax_exports():
  return first_party_exports('flax-serialization')
