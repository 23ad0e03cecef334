"""State-dict handlers that flax-serialization adds through its plugin."""

from flax.core.state_dict import current_path
from flax.core.state_dict import from_state_dict
from flax.core.state_dict import to_state_dict


def partial_to_state_dict(p) -> dict:
  """``jax.tree_util.Partial`` -> ``{'args': {...}, 'keywords': {...}}``."""
  return {
    'args': to_state_dict(p.args),
    'keywords': to_state_dict(p.keywords),
  }


def partial_from_state_dict(p, state):
  """Restores the arguments of a ``jax.tree_util.Partial``."""
  import jax

  if not isinstance(state, dict) or set(state) != {'args', 'keywords'}:
    raise ValueError(
      'Expected a state dict with keys "args" and "keywords" to restore a '
      f'jax.tree_util.Partial at path {current_path()}.'
    )
  args = from_state_dict(p.args, state['args'], name='args')
  keywords = from_state_dict(p.keywords, state['keywords'], name='keywords')
  return jax.tree_util.Partial(p.func, *args, **keywords)


def _is_variable(x) -> bool:
  return hasattr(x, 'get_value') and hasattr(x, 'replace')


def nnx_state_to_state_dict(state) -> dict:
  """``nnx.State`` -> nested dict of its Variables' values."""
  out = {}
  for key in state:
    value = state[key]
    if _is_variable(value):
      value = value.get_value()
    out[str(key)] = to_state_dict(value)
  return out


def nnx_state_from_state_dict(target, state):
  """Restores an ``nnx.State`` (Variables keep their type and metadata)."""
  if not isinstance(state, dict):
    raise ValueError(
      f'Expected a state dict to restore an nnx.State at path '
      f'{current_path()}, got {type(state).__name__}.'
    )
  missing = [str(k) for k in target if str(k) not in state]
  if missing:
    raise ValueError(
      f'The target nnx.State has keys {missing} which are not present in '
      f'the state dict at path {current_path()}'
    )
  restored = {}
  for key in target:
    value = target[key]
    if _is_variable(value):
      new = from_state_dict(value.get_value(), state[str(key)], name=str(key))
      restored[key] = value.replace(new)
    else:
      restored[key] = from_state_dict(value, state[str(key)], name=str(key))
  return type(target)(restored)
