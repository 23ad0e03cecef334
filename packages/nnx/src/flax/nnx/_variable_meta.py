"""``nnx.with_metadata``: initializers whose results carry Variable
metadata (re-exported by :mod:`flax.nnx.variablelib`)."""

import functools
import warnings


def with_metadata(
  initializer,
  on_set_value=(),
  on_get_value=(),
  on_create_value=(),
  on_add_axis=(),
  on_remove_axis=(),
  **metadata,
):
  """Wraps ``initializer`` so that its result carries Variable metadata.

  >>> from flax import nnx
  >>> import jax, jax.numpy as jnp
  >>> init = nnx.with_metadata(jax.nn.initializers.ones, tag='encoder')
  >>> p = nnx.Param(init(jax.random.key(0), (2,)))
  >>> p.tag
  'encoder'

  Sharding metadata (``out_sharding``) places the value eagerly, so it needs
  a mesh:

  >>> mesh = jax.make_mesh((1,), ('a',))
  >>> init = nnx.with_metadata(jax.nn.initializers.ones, out_sharding=('a',))
  >>> with jax.set_mesh(mesh):
  ...   p = nnx.Param(init(jax.random.key(0), (2,)))
  >>> p.out_sharding, p[...].sharding.spec
  (('a',), P('a',))
  """
  from flax.nnx.variablelib import VariableMetadata, _as_tuple

  if any(
    (on_set_value, on_get_value, on_create_value, on_add_axis, on_remove_axis)
  ):
    warnings.warn(
      'Variable hooks are deprecated: subclass Variable and override '
      '`get_value` / `set_value` instead.',
      UserWarning,
      stacklevel=2,
    )

  @functools.wraps(initializer)
  def wrapper(*args, **kwargs):
    return VariableMetadata(
      initializer(*args, **kwargs),
      on_set_value=_as_tuple(on_set_value),
      on_get_value=_as_tuple(on_get_value),
      on_create_value=_as_tuple(on_create_value),
      on_add_axis=_as_tuple(on_add_axis),
      on_remove_axis=_as_tuple(on_remove_axis),
      metadata=dict(metadata),
    )

  return wrapper
