"""Flat ``{'layer.weight': array}`` views of Flax weights, and back.

Works on anything ``flax.serialization.to_state_dict`` understands: a Linen
params dict (``variables['params']``), an ``nnx.State`` (``nnx.state(model,
nnx.Param)``), a ``TrainState``'s params, ... Names and layouts come from a
mapping (see ``flax_safetensors.mapping``); the default, ``'torch'``, gives
PyTorch's (``Linear.weight`` is ``(out, in)``, ``Conv2d.weight`` is
``OIHW``, ``LayerNorm.weight``, ``Embedding.weight``, BatchNorm's
``running_mean`` / ``running_var``).

>>> import numpy as np
>>> from flax_safetensors import flatten_weights, unflatten_weights
>>> params = {'fc': {'kernel': np.ones((3, 2), np.float32), 'bias': np.zeros(2)}}
>>> flat = flatten_weights(params)
>>> {name: a.shape for name, a in flat.items()}
{'fc.bias': (2,), 'fc.weight': (2, 3)}
>>> unflatten_weights(flat, params)['fc']['kernel'].shape
(3, 2)
"""

import os

import numpy as np
from flax.serialization import from_state_dict
from flax.serialization import to_state_dict
from flax.serialization.backend_utils import move_into_place
from flax.serialization.backend_utils import remove_path
from flax.serialization.backend_utils import unique_temp_path

from flax_safetensors import _files
from flax_safetensors import _place
from flax_safetensors import mapping as mapping_lib


def _leaves(state, path=()):
  """``[(path, leaf)]`` of a nested state dict, keys as strings."""
  if isinstance(state, dict):
    found = []
    for key, value in state.items():
      found += _leaves(value, (*path, str(key)))
    return found
  return [(path, state)]


def _shape_dtype(path, leaf):
  dtype = getattr(leaf, 'dtype', None)
  if hasattr(leaf, 'shape') and dtype is not None:
    if isinstance(dtype, np.dtype) or not _is_prng_key(dtype):
      return tuple(leaf.shape), dtype
    what = 'a PRNG key array'
  else:
    what = f'a {type(leaf).__name__}'
  raise TypeError(
    f'{mapping_lib.dotted(path)!r} is {what}, not weights: split the '
    f'weights from other state first (e.g. nnx.state(model, nnx.Param)).'
  )


def _is_prng_key(dtype) -> bool:
  import jax

  return jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def _named(tree, mapping):
  """``[(path, leaf, name, perm)]`` for the leaves of ``tree``; every name
  mapped and unique."""
  rule = mapping_lib.resolve(mapping)
  found, owner = [], {}
  for path, leaf in _leaves(to_state_dict(tree)):
    shape, _ = _shape_dtype(path, leaf)
    mapped = rule(path, shape)
    key = mapping_lib.dotted(path)
    if mapped is None:
      raise KeyError(
        f'{key!r} (shape {shape}) has no name in the mapping; add it, or '
        f'leave it out of the tree.'
      )
    name, perm = mapped
    if name in owner:
      raise ValueError(
        f'The mapping gives {owner[name]!r} and {key!r} the same name {name!r}.'
      )
    owner[name] = key
    found.append((path, leaf, name, perm))
  return found


def flatten_weights(tree, mapping='torch') -> dict:
  """A flat ``{name: numpy array}`` view of ``tree``'s arrays.

  Args:
    tree: a Linen params dict, an ``nnx.State``, or any tree of arrays that
      ``to_state_dict`` handles.
    mapping: ``'torch'`` (default), None (dotted Flax paths and layouts), a
      dict or a function; see ``flax_safetensors.mapping``.

  Returns:
    ``{name: array}``, names sorted, each array C-contiguous in the mapped
    layout.

  Raises:
    KeyError: if a path does not map (the message names it and its shape).
    ValueError: if two paths map to one name.
  """
  named = _named(tree, mapping)
  flat = {}
  for path, leaf, name, perm in named:
    array = np.asarray(leaf)
    if perm is not None:
      array = array.transpose(perm)
    flat[name] = np.ascontiguousarray(array)
  return dict(sorted(flat.items()))


class _DictSource:
  """A flat dict of arrays, read like a file."""

  def __init__(self, flat):
    self._flat = flat

  def names(self):
    return list(self._flat)

  def __contains__(self, name):
    return name in self._flat

  def shape(self, name):
    return tuple(np.shape(self._flat[name]))

  def read(self, name, index=None):
    array = np.asarray(self._flat[name])
    return array if index is None else array[index]


def _sharding_map(shardings, target):
  """``{path: sharding}`` from a tree like ``target``, or one sharding."""
  if shardings is None:
    return {}
  import jax

  if isinstance(shardings, jax.sharding.Sharding):
    return {path: shardings for path, _ in _leaves(to_state_dict(target))}
  return dict(_leaves(to_state_dict(shardings)))


def _assemble(source, target, mapping, shardings, strict):
  """The tree ``target`` filled from ``source`` (a file or a dict)."""
  import jax

  named = _named(target, mapping)
  by_path = _sharding_map(shardings, target)
  state, used = {}, set()
  for path, leaf, name, perm in named:
    key = mapping_lib.dotted(path)
    shape, dtype = _shape_dtype(path, leaf)
    if name not in source:
      raise KeyError(
        f'{key!r} (shape {shape}) maps to {name!r}, which the weights do '
        f'not have.'
      )
    stored = source.shape(name)
    expected = shape if perm is None else tuple(shape[p] for p in perm)
    if stored != expected:
      mapped = ''
      if perm is not None and len(stored) == len(perm):
        as_target = tuple(stored[int(j)] for j in np.argsort(perm))
        mapped = f", {as_target} in the target's layout"
      raise ValueError(
        f'Shape mismatch for {key!r}: the weights hold {name!r} with shape '
        f'{stored}{mapped}, but the target expects {shape}.'
      )
    used.add(name)
    sharding = by_path.get(path)
    if sharding is None and isinstance(leaf, jax.ShapeDtypeStruct | jax.Array):
      sharding = getattr(leaf, 'sharding', None)
      if sharding is None:  # an abstract leaf without one: default device
        sharding = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])

    def read(index, name=name):
      return source.read(name, index)

    value = _place.place(
      _place.transposed(read, perm, shape), shape, dtype, sharding
    )
    node = state
    for k in path[:-1]:
      node = node.setdefault(k, {})
    node[path[-1]] = value
  if strict:
    skipped = mapping_lib.TORCH_EXTRA_BUFFERS
    unused = [
      n
      for n in source.names()
      if n not in used and n.rsplit('.', 1)[-1] not in skipped
    ]
    if unused:
      raise ValueError(
        f'{len(unused)} weights are not used by the target: '
        f'{", ".join(repr(n) for n in sorted(unused))} (pass strict=False to '
        f'ignore them).'
      )
  return from_state_dict(target, _restore_keys(to_state_dict(target), state))


def _restore_keys(template, state):
  """``state`` (string keys) with the key types of ``template``."""
  if not isinstance(template, dict):
    return state
  return {
    k: _restore_keys(v, state.get(str(k), v)) for k, v in template.items()
  }


def unflatten_weights(
  flat, target, mapping='torch', *, shardings=None, strict=True
):
  """``target``'s tree, its arrays taken from a flat ``{name: array}`` dict.

  Args:
    flat: ``{name: array}``, e.g. ``safetensors.numpy.load_file(...)``.
    target: the tree to fill: a Linen params dict, an ``nnx.State``
      (abstract ones from ``nnx.eval_shape`` included), ...; only its
      structure, shapes and dtypes are used. Arrays are cast to its dtypes.
    mapping: as for ``flatten_weights``.
    shardings: a tree like ``target`` of ``jax.sharding.Sharding``s, or one
      sharding for every array. By default a leaf's own sharding is used
      (``jax.ShapeDtypeStruct`` and ``jax.Array`` leaves); NumPy leaves
      give NumPy arrays.
    strict: raise if ``flat`` holds names the target does not use
      (PyTorch's ``num_batches_tracked`` buffers excepted).

  Raises:
    KeyError: a target path maps to a name ``flat`` lacks (the message
      names the path, the name and the shape).
    ValueError: a shape mismatch (the message names the path and both
      shapes), or unused names when ``strict``.
  """
  return _assemble(_DictSource(flat), target, mapping, shardings, strict)


def save_file(tree, filename, mapping='torch', *, metadata=None) -> None:
  """Writes ``flatten_weights(tree, mapping)`` as a safetensors file.

  The file is written under a temporary name and renamed into place, so
  an interrupted save leaves any earlier file whole.

  Args:
    tree: as for ``flatten_weights``.
    filename: the file to write.
    mapping: as for ``flatten_weights``.
    metadata: ``{str: str}`` stored in the file's header.
  """
  from safetensors.numpy import save_file as write

  flat = flatten_weights(tree, mapping)
  filename = os.fspath(filename)
  temp = unique_temp_path(filename)
  try:
    write(flat, temp, metadata=metadata)
    move_into_place(temp, filename, overwrite=True)
  finally:
    remove_path(temp)


def load_file(
  filename, target, mapping='torch', *, shardings=None, strict=True
):
  """``target``'s tree with its arrays read from a safetensors file.

  Each array is read from the file straight into place: with a sharding
  (``shardings``, or the sharding of a ``jax.ShapeDtypeStruct`` leaf of an
  abstract target such as ``nnx.eval_shape`` gives), every device reads
  only its own slice, so the full tree is never assembled on one device.

  >>> import os, tempfile
  >>> import numpy as np
  >>> from flax_safetensors import load_file, save_file
  >>> path = os.path.join(tempfile.mkdtemp(), 'model.safetensors')
  >>> params = {'fc': {'kernel': np.arange(6.0).reshape(3, 2)}}
  >>> save_file(params, path)
  >>> load_file(path, params)['fc']['kernel'].tolist()
  [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]

  Args and raises: as for ``unflatten_weights``; a damaged file raises
  ``flax.serialization.CheckpointCorruptedError`` naming it.
  """
  with _files.SafetensorsFile(filename) as f:
    return _assemble(f, target, mapping, shardings, strict)
