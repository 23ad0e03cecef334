"""Partitioning backends: who applies sharding constraints.

A backend is an object with three methods:

* ``context_mesh()``: the mesh of the current context, or None;
* ``constrain(x, spec, mesh=None)``: ``x`` sharded as ``spec`` (on ``mesh``,
  else on the context mesh); ``x`` itself when there is no mesh;
* ``named_sharding(mesh, spec)``: the sharding object for ``spec``.

flax-spmd registers ``'jax'`` (JAX shardings; the default) and ``'none'``
(no constraints, e.g. to debug a model on one device) through the
``flax_partitioning_backends`` hook. Select one with
``flax.plugins.use_backend('partitioning', 'none')``, the
``flax_partitioning_backend`` flag or ``FLAX_PARTITIONING_BACKEND``.

>>> from flax import plugins, spmd
>>> import jax.numpy as jnp
>>> with plugins.use_backend('partitioning', 'none'):
...   spmd.current_backend().name
'none'
"""

from jax.sharding import NamedSharding

from flax.core import meta

__all__ = [
  'JAX',
  'NONE',
  'JaxPartitioning',
  'NoPartitioning',
  'current_backend',
]


class JaxPartitioning:
  """Shards with ``jax.lax.with_sharding_constraint`` / ``reshard``."""

  name = 'jax'

  def context_mesh(self):
    return meta.get_global_mesh()

  def constrain(self, x, spec, mesh=None):
    return meta.apply_sharding_constraint(x, spec, mesh)

  def named_sharding(self, mesh, spec):
    return NamedSharding(mesh, spec)

  def __repr__(self):
    return 'JaxPartitioning()'


class NoPartitioning(JaxPartitioning):
  """Applies no sharding constraints at all."""

  name = 'none'

  def context_mesh(self):
    return None

  def constrain(self, x, spec, mesh=None):
    del spec, mesh
    return x

  def __repr__(self):
    return 'NoPartitioning()'


JAX = JaxPartitioning()
NONE = NoPartitioning()


def current_backend():
  """The partitioning backend selected now (see the module docstring)."""
  from flax import plugins

  try:
    return plugins.select_backend('partitioning')
  except plugins.PluginError:
    # No plugin provides one (e.g. plugins disabled): use JAX's.
    return JAX
