"""flax.spmd: partitioning metadata, logical axis rules and sharding.

Parameters created with ``with_partitioning`` / ``with_logical_partitioning``
carry the names of their axes; ``get_partition_spec`` reads them back, and
``logical_to_mesh`` turns logical names into mesh axes with rules:

>>> import jax
>>> from flax import spmd
>>> init = spmd.with_logical_partitioning(jax.nn.initializers.zeros,
...                                       ('embed', 'mlp'))
>>> params = {'kernel': init(jax.random.key(0), (4, 8))}
>>> logical = spmd.get_partition_spec(params)
>>> logical
{'kernel': P('embed', 'mlp')}
>>> spmd.logical_to_mesh(logical, (('mlp', 'model'),))
{'kernel': P(None, 'model')}
"""

from flax.core.meta import PARTITION_NAME as PARTITION_NAME
from flax.core.meta import AxisMetadata as AxisMetadata
from flax.core.meta import Partitioned as Partitioned
from flax.core.meta import get_global_mesh as get_global_mesh
from flax.core.meta import get_partition_spec as get_partition_spec
from flax.core.meta import get_sharding as get_sharding
from flax.core.meta import unbox as unbox
from flax.core.meta import with_partitioning as with_partitioning
from flax.spmd._backends import JaxPartitioning as JaxPartitioning
from flax.spmd._backends import NoPartitioning as NoPartitioning
from flax.spmd._backends import current_backend as current_backend
from flax.spmd._logical import LogicallyPartitioned as LogicallyPartitioned
from flax.spmd._logical import RulesFallback as RulesFallback
from flax.spmd._logical import (
  _with_sharding_constraint as _with_sharding_constraint,
)
from flax.spmd._logical import (
  _with_sharding_constraint_one_fallback as _with_sharding_constraint_one_fallback,
)
from flax.spmd._logical import (
  with_logical_constraint as with_logical_constraint,
)
from flax.spmd._logical import (
  with_logical_partitioning as with_logical_partitioning,
)
from flax.spmd._rules import get_logical_axis_rules as get_logical_axis_rules
from flax.spmd._rules import logical_axis_rules as logical_axis_rules
from flax.spmd._rules import logical_to_mesh as logical_to_mesh
from flax.spmd._rules import logical_to_mesh_axes as logical_to_mesh_axes
from flax.spmd._rules import (
  logical_to_mesh_sharding as logical_to_mesh_sharding,
)
from flax.spmd._rules import set_logical_axis_rules as set_logical_axis_rules

__all__ = [
  'PARTITION_NAME',
  'AxisMetadata',
  'JaxPartitioning',
  'LogicallyPartitioned',
  'NoPartitioning',
  'Partitioned',
  'RulesFallback',
  'current_backend',
  'get_global_mesh',
  'get_logical_axis_rules',
  'get_partition_spec',
  'get_sharding',
  'logical_axis_rules',
  'logical_to_mesh',
  'logical_to_mesh_axes',
  'logical_to_mesh_sharding',
  'set_logical_axis_rules',
  'unbox',
  'with_logical_constraint',
  'with_logical_partitioning',
  'with_partitioning',
]
