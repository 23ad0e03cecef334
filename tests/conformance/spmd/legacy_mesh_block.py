"""Metadata sharding constraints follow jax.set_mesh; an older `with mesh:`
block is not a context mesh (constraints are skipped), an explicit mesh
always applies."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import report
from flax import linen as nn
from flax.core import meta
from flax.linen import partitioning as nn_partitioning
from jax.sharding import Mesh

warnings.simplefilter('ignore', DeprecationWarning)
mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ('data', 'model'))
rules = (('batch', 'data'), ('embed', None))
x = jnp.ones((8, 4))
cases = {
  'with_logical_constraint': lambda x: nn.with_logical_constraint(
    x * 2, ('batch', 'embed')
  ),
  'partitioning.with_sharding_constraint': lambda x: (
    nn_partitioning.with_sharding_constraint(x * 2, ('batch', 'embed'))
  ),
  'Partitioned.unbox': lambda x: meta.Partitioned(
    x * 2, ('data', None)
  ).unbox(),
  'LogicallyPartitioned.unbox': lambda x: nn.LogicallyPartitioned(
    x * 2, ('batch', 'embed')
  ).unbox(),
  'explicit mesh': lambda x: nn.with_logical_constraint(
    x * 2, ('batch', 'embed'), mesh=mesh
  ),
}


def sharding(y):
  s = y.sharding
  return str(s.spec) if hasattr(s, 'spec') else type(s).__name__


for name, f in cases.items():
  with mesh, nn.logical_axis_rules(rules):
    report.value(f'{name} under with mesh', sharding(jax.jit(f)(x)))
  with jax.set_mesh(mesh), nn.logical_axis_rules(rules):
    report.value(f'{name} under set_mesh', sharding(jax.jit(f)(x)))
with mesh:
  report.value('get_global_mesh under with mesh', meta.get_global_mesh())
