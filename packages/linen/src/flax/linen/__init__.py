"""The Linen API: ``from flax import linen as nn``.

Linen Modules are dataclasses that describe a computation; ``init`` creates
their variables and ``apply`` runs them. This distribution provides the
Module system, the lifted transforms, ``Sequential`` and ``tabulate``.
Layers (``nn.Dense``, ...) and partitioning helpers come from other
distributions through the plugin registry and are resolved on first access.

>>> import jax, jax.numpy as jnp
>>> from flax import linen as nn
>>> class Bias(nn.Module):
...   @nn.compact
...   def __call__(self, x):
...     return x + self.param('b', jax.nn.initializers.zeros, x.shape[-1:])
>>> variables = Bias().init(jax.random.key(0), jnp.ones(3))
>>> jax.tree_util.tree_map(jnp.shape, variables)
{'params': {'b': (3,)}}
"""

from flax.core.frozen_dict import FrozenDict as FrozenDict
from flax.core.meta import PARTITION_NAME as PARTITION_NAME
from flax.core.meta import Partitioned as Partitioned
from flax.core.meta import get_partition_spec as get_partition_spec
from flax.core.meta import get_sharding as get_sharding
from flax.core.meta import unbox as unbox
from flax.core.meta import with_partitioning as with_partitioning
from flax.core.scope import CollectionFilter as CollectionFilter
from flax.core.scope import DenyList as DenyList
from flax.core.scope import Variable as Variable
from flax.linen._context import disable_named_call as disable_named_call
from flax.linen._context import enable_named_call as enable_named_call
from flax.linen._context import named_call as named_call
from flax.linen._context import override_named_call as override_named_call
from flax.linen._functional import apply as apply
from flax.linen._functional import init as init
from flax.linen._functional import init_with_output as init_with_output
from flax.linen._functional import intercept_methods as intercept_methods
from flax.linen._functional import merge_param as merge_param
from flax.linen._functional import share_scope as share_scope
from flax.linen.batch_apply import BatchApply as BatchApply
from flax.linen.combinators import Sequential as Sequential
from flax.linen.module import Module as Module
from flax.linen.module import compact as compact
from flax.linen.module import compact_name_scope as compact_name_scope
from flax.linen.module import nowrap as nowrap
from flax.plugins import lazy_namespace as _lazy_namespace
from flax.typing import Collection as Collection


# Every other name (``nn.jit``, ``nn.Dense``, ``nn.linear``, ...) comes from
# the first-party export table and the plugins, on first access.
__getattr__, __dir__ = _lazy_namespace(__name__)
