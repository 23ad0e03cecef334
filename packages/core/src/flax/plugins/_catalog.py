"""The names every first-party distribution adds to Flax namespaces.

This is the one table of them: each first-party plugin returns its part
(``first_party_exports(dist)``) from its ``flax_exports`` hook; ``flax``'s
lazy subpackages, the lazy names of ``flax.linen`` and ``flax.nnx``, the
alias module paths (``flax.linen.linear``) and the "install X" hint for a
name whose distribution is missing are all derived from it. It lives in
flax-core so that the hint is known when the providing distribution is not
installed. Entries are ``(name, target)`` pairs; a target is
``'module:attr'``, or a module path to export a whole module.

>>> from flax.plugins import first_party_exports
>>> [e for e in first_party_exports('flax-layers') if e.name == 'Dense']
[Export(namespace='flax.linen', name='Dense', target='flax.layers.linen:Dense')]
"""

import functools

from flax.plugins._records import Export

# -- flax-layers --------------------------------------------------------------

# The activation functions, exported into both flax.linen and flax.nnx.
_ACTIVATIONS = (
  'celu',
  'elu',
  'gelu',
  'glu',
  'hard_sigmoid',
  'hard_silu',
  'hard_swish',
  'hard_tanh',
  'identity',
  'leaky_relu',
  'log_sigmoid',
  'log_softmax',
  'logsumexp',
  'mish',
  'normalize',
  'one_hot',
  'relu',
  'relu6',
  'selu',
  'sigmoid',
  'silu',
  'soft_sign',
  'softmax',
  'softplus',
  'standardize',
  'swish',
  'tanh',
)

# flax.layers.linen names exported as flax.linen.<name>.
_LAYERS_LINEN = (
  'Dense',
  'DenseGeneral',
  'Einsum',
  'Conv',
  'ConvTranspose',
  'ConvLocal',
  'Embed',
  'BatchNorm',
  'LayerNorm',
  'RMSNorm',
  'GroupNorm',
  'InstanceNorm',
  'SpectralNorm',
  'WeightNorm',
  'Dropout',
  'MultiHeadDotProductAttention',
  'MultiHeadAttention',
  'SelfAttention',
  'dot_product_attention',
  'dot_product_attention_weights',
  'make_attention_mask',
  'make_causal_mask',
  'combine_masks',
  'RNNCellBase',
  'LSTMCell',
  'OptimizedLSTMCell',
  'GRUCell',
  'MGUCell',
  'SimpleCell',
  'ConvLSTMCell',
  'RNN',
  'Bidirectional',
  'PReLU',
  'avg_pool',
  'max_pool',
  'min_pool',
  'pool',
  'sparse_plus',
  'sparse_sigmoid',
  'ones',
  'ones_init',
  'zeros',
  'zeros_init',
)

# The Linen FP8 modules, exported as flax.linen.<name> from their own module
# (imported only when one is used).
_FP8_LINEN = (
  'Fp8DotGeneral',
  'Fp8DotGeneralOp',
  'Fp8DirectDotGeneralOp',
  'Fp8Einsum',
  'NANOOFp8DotGeneralOp',
)

# flax.layers.nnx names exported as flax.nnx.<name>.
_LAYERS_NNX = (
  'Linear',
  'LinearGeneral',
  'Einsum',
  'Embed',
  'Conv',
  'ConvTranspose',
  'BatchNorm',
  'LayerNorm',
  'RMSNorm',
  'GroupNorm',
  'InstanceNorm',
  'SpectralNorm',
  'WeightNorm',
  'Dropout',
  'MultiHeadAttention',
  'dot_product_attention',
  'dot_product_attention_weights',
  'make_attention_mask',
  'make_causal_mask',
  'combine_masks',
  'RNNCellBase',
  'LSTMCell',
  'OptimizedLSTMCell',
  'GRUCell',
  'SimpleCell',
  'RNN',
  'Bidirectional',
  'flip_sequences',
  'LoRA',
  'LoRALinear',
  'LoRAParam',
  'Sequential',
  'PReLU',
  'avg_pool',
  'max_pool',
  'min_pool',
  'pool',
)

# Whole modules: (namespace, name, module).
_LAYERS_MODULES = (
  ('flax.linen', 'activation', 'flax.layers.linen.activation'),
  ('flax.linen', 'attention', 'flax.layers.linen.attention'),
  ('flax.linen', 'dtypes', 'flax.layers.linen.dtypes'),
  ('flax.linen', 'fp8_ops', 'flax.layers.linen.fp8_ops'),
  ('flax.linen', 'initializers', 'flax.layers.linen.initializers'),
  ('flax.linen', 'linear', 'flax.layers.linen.linear'),
  ('flax.linen', 'normalization', 'flax.layers.linen.normalization'),
  ('flax.linen', 'pooling', 'flax.layers.linen.pooling'),
  ('flax.linen', 'recurrent', 'flax.layers.linen.recurrent'),
  ('flax.linen', 'stochastic', 'flax.layers.linen.stochastic'),
  ('flax.nnx', 'initializers', 'flax.layers.nnx.initializers'),
  ('flax.nnx', 'nn', 'flax.nnx.nn'),
)

# -- flax-spmd ----------------------------------------------------------------

# flax.spmd names exported as flax.linen.<name> (flax.linen defines
# Partitioned, with_partitioning, get_partition_spec, get_sharding,
# PARTITION_NAME and unbox itself).
_SPMD_LINEN = (
  'LogicallyPartitioned',
  'RulesFallback',
  'get_logical_axis_rules',
  'logical_axis_rules',
  'logical_to_mesh',
  'logical_to_mesh_axes',
  'logical_to_mesh_sharding',
  'set_logical_axis_rules',
  'with_logical_constraint',
  'with_logical_partitioning',
)

# -- flax-training ------------------------------------------------------------

_OPT = 'flax.training.nnx.optimizer'
_METRICS = 'flax.training.nnx.metrics'
_TRAINING_NNX = (
  ('Optimizer', f'{_OPT}:Optimizer'),
  ('ModelAndOptimizer', f'{_OPT}:ModelAndOptimizer'),
  ('OptState', f'{_OPT}:OptState'),
  ('OptArray', f'{_OPT}:OptArray'),
  ('OptVariable', f'{_OPT}:OptVariable'),
  ('optimizer', _OPT),
  ('metrics', _METRICS),
  ('Metric', f'{_METRICS}:Metric'),
  ('MultiMetric', f'{_METRICS}:MultiMetric'),
  ('EMA', 'flax.training.nnx.ema:EMA'),
)

# -- flax-linen and flax-nnx: their own names, imported on first access -------

_NNX_OWN = (
  ('Initializer', 'flax.typing:Initializer'),
  ('TrainState', 'flax.nnx.helpers:TrainState'),
  ('Carry', 'flax.nnx.transforms.iteration:Carry'),
  ('DiffState', 'flax.nnx.transforms.autodiff:DiffState'),
  ('PARTITION_NAME', 'flax.nnx.spmd:PARTITION_NAME'),
  ('abstract_with_sharding', 'flax.nnx.spmd:abstract_with_sharding'),
  ('as_abstract', 'flax.nnx.spmd:as_abstract'),
  ('get_abstract_model', 'flax.nnx.spmd:get_abstract_model'),
  ('logical_axis_rules', 'flax.core.spmd:logical_axis_rules'),
  ('StateAxes', 'flax.nnx.transforms.iteration:StateAxes'),
  ('StateSharding', 'flax.nnx.transforms.compilation:StateSharding'),
  ('cached_partial', 'flax.nnx.transforms.compilation:cached_partial'),
  ('checkify', 'flax.nnx.transforms.transforms:checkify'),
  ('make_jaxpr', 'flax.nnx.transforms.transforms:make_jaxpr'),
  ('jit_partial', 'flax.nnx.transforms.compilation:jit_partial'),
  ('transform_metadata', 'flax.nnx.transforms.iteration:transform_metadata'),
  ('checkpoint', 'flax.nnx.transforms.autodiff:checkpoint'),
  ('cond', 'flax.nnx.transforms.general:cond'),
  ('custom_vjp', 'flax.nnx.transforms.autodiff:custom_vjp'),
  ('display', 'flax.nnx.visualization:display'),
  ('eval_shape', 'flax.nnx.transforms.general:eval_shape'),
  ('fori_loop', 'flax.nnx.transforms.general:fori_loop'),
  ('get_named_sharding', 'flax.nnx.spmd:get_named_sharding'),
  ('get_partition_spec', 'flax.nnx.spmd:get_partition_spec'),
  ('grad', 'flax.nnx.transforms.autodiff:grad'),
  ('jit', 'flax.nnx.transforms.compilation:jit'),
  ('jvp', 'flax.nnx.transforms.autodiff:jvp'),
  ('pmap', 'flax.nnx.transforms.iteration:pmap'),
  ('remat', 'flax.nnx.transforms.autodiff:remat'),
  ('scan', 'flax.nnx.transforms.iteration:scan'),
  ('shard_map', 'flax.nnx.transforms.shardmap:shard_map'),
  ('switch', 'flax.nnx.transforms.general:switch'),
  ('tabulate', 'flax.nnx.summary:tabulate'),
  ('value_and_grad', 'flax.nnx.transforms.autodiff:value_and_grad'),
  ('vjp', 'flax.nnx.transforms.autodiff:vjp'),
  ('vmap', 'flax.nnx.transforms.iteration:vmap'),
  ('while_loop', 'flax.nnx.transforms.general:while_loop'),
  ('with_partitioning', 'flax.nnx.spmd:with_partitioning'),
  ('bridge', 'flax.nnx.bridge'),
  ('wrappers', 'flax.nnx.bridge.wrappers'),
  ('compat', 'flax.nnx.compat'),
  ('extract', 'flax.nnx.extract'),
  ('graph', 'flax.nnx.graph'),
  ('proxy_caller', 'flax.nnx.proxy_caller'),
  ('traversals', 'flax.nnx.traversals'),
  ('deprecations', 'flax.nnx.deprecations'),
  ('helpers', 'flax.nnx.helpers'),
  ('object', 'flax.nnx.pytreelib'),
  ('pytreelib', 'flax.nnx.pytreelib'),
  ('reprlib', 'flax.nnx.reprlib'),
  ('spmd', 'flax.nnx.spmd'),
  ('summary', 'flax.nnx.summary'),
  ('tracers', 'flax.nnx.tracers'),
  ('training', 'flax.nnx.training'),
  ('visualization', 'flax.nnx.visualization'),
)

_LINEN_OWN = (
  ('tabulate', 'flax.linen.summary:tabulate'),
  ('add_metadata_axis', 'flax.linen.transforms:add_metadata_axis'),
  ('broadcast', 'flax.linen.transforms:broadcast'),
  ('checkpoint', 'flax.linen.transforms:checkpoint'),
  ('cond', 'flax.linen.transforms:cond'),
  ('custom_vjp', 'flax.linen.transforms:custom_vjp'),
  ('fold_rngs', 'flax.linen.transforms:fold_rngs'),
  ('grad', 'flax.linen.transforms:grad'),
  ('jit', 'flax.linen.transforms:jit'),
  ('jvp', 'flax.linen.transforms:jvp'),
  ('map_variables', 'flax.linen.transforms:map_variables'),
  ('remat', 'flax.linen.transforms:remat'),
  ('remat_scan', 'flax.linen.transforms:remat_scan'),
  ('scan', 'flax.linen.transforms:scan'),
  ('switch', 'flax.linen.transforms:switch'),
  ('value_and_grad', 'flax.linen.transforms:value_and_grad'),
  ('vjp', 'flax.linen.transforms:vjp'),
  ('vmap', 'flax.linen.transforms:vmap'),
  ('while_loop', 'flax.linen.transforms:while_loop'),
  ('transforms', 'flax.linen.transforms'),
  ('summary', 'flax.linen.summary'),
  ('batch_apply', 'flax.linen.batch_apply'),
  ('kw_only_dataclasses', 'flax.linen.kw_only_dataclasses'),
)

# -- the root ``flax`` namespace: subpackages and the distribution of each ----

_SUBPACKAGES = {
  'flax-core': (
    'configurations',
    'core',
    'cursor',
    'errors',
    'ids',
    'io',
    'plugins',
    'struct',
    'traceback_util',
    'traverse_util',
    'typing',
  ),
  'flax-serialization': ('serialization',),
  'flax-spmd': ('spmd',),
  'flax-linen': ('linen',),
  'flax-nnx': ('nnx', 'experimental'),
  'flax-layers': ('layers',),
  'flax-training': ('training', 'jax_utils', 'metrics'),
}


def _in(namespace, pairs):
  return [Export(namespace, name, target) for name, target in pairs]


@functools.cache
def _table() -> dict:
  root = {
    dist: _in('flax', [(name, f'flax.{name}') for name in names])
    for dist, names in _SUBPACKAGES.items()
  }
  return {
    'flax-core': root['flax-core'],
    'flax-serialization': root['flax-serialization'],
    'flax-spmd': root['flax-spmd']
    + _in('flax.linen', [(n, f'flax.spmd:{n}') for n in _SPMD_LINEN])
    + _in(
      'flax.linen',
      [
        ('spmd', 'flax.spmd'),
        ('partitioning', 'flax.spmd.linen'),
        # ``nn.meta`` (Flax's flax.linen.meta is flax.core.meta).
        ('meta', 'flax.core.meta'),
      ],
    ),
    'flax-linen': root['flax-linen'] + _in('flax.linen', _LINEN_OWN),
    'flax-nnx': root['flax-nnx'] + _in('flax.nnx', _NNX_OWN),
    'flax-layers': root['flax-layers']
    + _in('flax.linen', [(n, f'flax.layers.linen:{n}') for n in _LAYERS_LINEN])
    + _in('flax.linen', [(n, f'flax.layers.linen:{n}') for n in _ACTIVATIONS])
    + _in(
      'flax.linen',
      [(n, f'flax.layers.linen.fp8_ops:{n}') for n in _FP8_LINEN],
    )
    + _in('flax.nnx', [(n, f'flax.layers.nnx:{n}') for n in _LAYERS_NNX])
    + _in('flax.nnx', [(n, f'flax.layers.nnx:{n}') for n in _ACTIVATIONS])
    + [Export(*m) for m in _LAYERS_MODULES],
    'flax-training': root['flax-training'] + _in('flax.nnx', _TRAINING_NNX),
  }


def first_party_exports(distribution: str) -> list:
  """The ``Export`` records of a first-party distribution (a new list)."""
  return list(_table()[distribution])


@functools.cache
def _index() -> dict:
  return {
    (e.namespace, e.name): (dist, e)
    for dist, exports in _table().items()
    for e in exports
  }


def first_party_provider(namespace: str, name: str):
  """``(distribution, Export)`` of a first-party ``namespace.name``, or None."""
  return _index().get((namespace, name))


def first_party_names(namespace: str, distribution=None) -> list:
  """The names first-party distributions (or one of them) add to a namespace."""
  return sorted(
    name
    for (ns, name), (dist, _) in _index().items()
    if ns == namespace and distribution in (None, dist)
  )


def owner(namespace: str):
  """The first-party distribution that provides ``namespace`` itself."""
  head, _, tail = namespace.rpartition('.')
  found = first_party_provider(head, tail) if head else None
  return found[0] if found else None
