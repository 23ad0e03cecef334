"""Graph-mode versions of the NNX API: every function here is its
``flax.nnx`` counterpart with ``graph=True`` (and ``graph_updates=True``
where the function takes it) fixed, for code written before tree mode.

>>> from flax.nnx import compat
>>> compat.iter_modules.keywords
{'graph': True}
"""

from flax.nnx._common import set_graph_mode
import functools
import importlib
import inspect

_NAMES = (
  'backup_keys',
  'cached_partial',
  'checkify',
  'clone',
  'cond',
  'custom_vjp',
  'eval_shape',
  'flatten',
  'fori_loop',
  'fork_rngs',
  'get_abstract_model',
  'grad',
  'graphdef',
  'iter_children',
  'iter_graph',
  'iter_modules',
  'jit',
  'jvp',
  'pmap',
  'recursive_map',
  'remat',
  'reseed',
  'scan',
  'shard_map',
  'split',
  'split_rngs',
  'state',
  'switch',
  'value_and_grad',
  'view',
  'view_info',
  'vjp',
  'vmap',
  'while_loop',
)


def _graph_partial(fn):
  try:
    params = inspect.signature(fn).parameters
  except (TypeError, ValueError):
    params = {}
  fixed = {name: True for name in ('graph', 'graph_updates') if name in params}
  if 'graph' in fixed:
    return functools.partial(fn, **fixed)

  # No ``graph`` argument: run it with graph mode as the default.
  @functools.wraps(fn)
  def in_graph_mode(*args, **kwargs):

    with set_graph_mode(True):
      return fn(*args, **kwargs)

  return in_graph_mode


def __getattr__(name):
  if name not in _NAMES:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  nnx = importlib.import_module('flax.nnx')
  value = _graph_partial(getattr(nnx, name))
  globals()[name] = value
  return value


def __dir__():
  return sorted(set(globals()) | set(_NAMES))
