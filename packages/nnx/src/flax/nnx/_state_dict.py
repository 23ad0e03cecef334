"""State-dict conversion of ``nnx.State`` (registered by flax-nnx's plugin).

A State becomes a nested dict of plain values keyed by strings, so it saves
with ``flax.serialization`` like any Flax state dict; restoring keeps each
Variable's type and metadata from the target.
"""

from flax.core.state_dict import current_path
from flax.core.state_dict import from_state_dict
from flax.core.state_dict import to_state_dict


def _unwrap(x):
  """A Variable's value, or ``x`` itself."""
  getter = getattr(x, 'get_value', None)
  return getter() if callable(getter) and hasattr(x, 'replace') else x


def state_to_state_dict(state) -> dict:
  """``nnx.State`` -> nested dict of its Variables' values."""
  return {str(k): to_state_dict(_unwrap(state[k])) for k in state}


def state_from_state_dict(target, state):
  """A copy of ``target`` (an ``nnx.State``) holding the values of ``state``."""
  if not isinstance(state, dict):
    raise ValueError(
      f'Cannot restore an nnx.State at path {current_path()} from a '
      f'{type(state).__name__}: a dict of its entries is needed.'
    )
  absent = [str(k) for k in target if str(k) not in state]
  if absent:
    raise ValueError(
      f'The state dict at path {current_path()} has no entry for the keys '
      f'{absent} of the target nnx.State.'
    )
  out = {}
  for key in target:
    entry = target[key]
    value = from_state_dict(_unwrap(entry), state[str(key)], name=str(key))
    out[key] = entry.replace(value) if entry is not _unwrap(entry) else value
  return type(target)(out)
