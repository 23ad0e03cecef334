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
