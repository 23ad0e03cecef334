"""Plugin of the flax-nnx distribution: what it adds to Flax namespaces."""

from flax.plugins import StateHandler
from flax.plugins import first_party_exports
from flax.plugins import hookimpl


@hookimpl
def flax_exports():
  return first_party_exports('flax-nnx')


@hookimpl
def flax_state_handlers():
  # nnx.State saves as a nested dict of its Variables' values; the functions
  # are imported only when a State is converted.
  return [
    StateHandler(
      'flax.nnx.statelib:State',
      'flax.nnx._state_dict:state_to_state_dict',
      'flax.nnx._state_dict:state_from_state_dict',
    ),
  ]
