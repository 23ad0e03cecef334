"""flax.core: FrozenDict, metadata boxes, variables, Scope and lifting.

Names are imported from their modules on first access, so ``import
flax.core`` stays cheap.
"""

import importlib as _importlib

# name -> module (relative to flax.core) that defines it.
_LAZY = {
  # frozen_dict
  'FrozenDict': 'frozen_dict',
  'freeze': 'frozen_dict',
  'unfreeze': 'frozen_dict',
  'copy': 'frozen_dict',
  'pop': 'frozen_dict',
  'pretty_repr': 'frozen_dict',
  # meta
  'AxisMetadata': 'meta',
  'Partitioned': 'meta',
  'with_partitioning': 'meta',
  'unbox': 'meta',
  'map_axis_meta': 'meta',
  'add_axis': 'meta',
  'remove_axis': 'meta',
  'PARTITION_NAME': 'meta',
  'get_partition_spec': 'meta',
  'get_sharding': 'meta',
  'is_axis_metadata': 'meta',
  'replace_boxed': 'meta',
  # scope
  'Scope': 'scope',
  'Array': 'scope',
  'DenyList': 'scope',
  'CollectionFilter': 'scope',
  'PRNGSequenceFilter': 'scope',
  'apply': 'scope',
  'init': 'scope',
  'bind': 'scope',
  'lazy_init': 'scope',
  'Variable': 'scope',
  'LazyRng': 'scope',
  'in_filter': 'scope',
  'union_filters': 'scope',
  'intersect_filters': 'scope',
  'subtract_filters': 'scope',
  'group_collections': 'scope',
  # tracers
  'check_trace_level': 'tracers',
  'current_trace': 'tracers',
  # lift
  'broadcast': 'axes_scan',
  'pack': 'lift',
  'vmap': 'lift',
  'scan': 'lift',
  'jit': 'lift',
  'remat': 'lift',
  'checkpoint': 'lift',
  'remat_scan': 'lift',
  'jvp': 'lift',
  'vjp': 'lift',
  'custom_vjp': 'lift',
  'while_loop': 'lift',
  'cond': 'lift',
  'switch': 'lift',
  'map_variables': 'lift',
  'fold_rngs': 'lift',
}
_SUBMODULES = (
  'frozen_dict',
  'meta',
  'scope',
  'lift',
  'variables',
  'nn',
  'axes_scan',
  'tracers',
  'partial_eval',
  'state_dict',
  'spmd',
)


def __getattr__(name):
  if name in _LAZY:
    module = _importlib.import_module(f'{__name__}.{_LAZY[name]}')
    value = getattr(module, name)
  elif name in _SUBMODULES:
    value = _importlib.import_module(f'{__name__}.{name}')
  else:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  globals()[name] = value
  return value


def __dir__():
  return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))
