"""The ``safetensors`` checkpoint backend.

Checkpoint ``step`` is a directory ``{prefix}{step}/`` holding one file,
``model.safetensors``: every array of the state dict as a tensor named by
its dotted path, and the rest of the tree (dict keys, Python numbers,
strings) as JSON in the header's metadata. Any safetensors reader opens
the file; ``restore_checkpoint`` rebuilds the tree exactly.

Saving, listing, publishing and pruning are the protocol's own
(``flax.serialization.backend_utils.CheckpointBackend``), so saves are
atomic: a save is written under a temporary name and renamed into place,
and a failed or interrupted save leaves the earlier checkpoints as they
were.

Restoring into a target whose leaves are ``jax.ShapeDtypeStruct``s with a
sharding reads each device's slice of each array from the file. A file
written elsewhere (no tree in its metadata) restores with its dotted names
nested, ``fc.weight`` -> ``{'fc': {'weight': ...}}``.
"""

import functools
import os

from flax.serialization import from_state_dict
from flax.serialization import to_state_dict
from flax.serialization.backend_utils import CheckpointBackend
from flax.serialization.backend_utils import restore_abstract_leaves

from flax_safetensors import _files
from flax_safetensors import _place
from flax_safetensors import _tree

CHECKPOINT_FILE = 'model.safetensors'


def _fsync(path) -> None:
  fd = os.open(path, os.O_RDONLY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def _flat_leaves(state, path=()):
  """``{path: leaf}`` of a nested state dict."""
  if isinstance(state, dict):
    found = {}
    for key, value in state.items():
      found.update(_flat_leaves(value, (*path, key)))
    return found
  return {path: state}


def _abstract_sharded(target) -> dict:
  """``{path: ShapeDtypeStruct}`` for the target's leaves that have a
  sharding; these are read slice by slice."""
  import jax

  return {
    path: leaf
    for path, leaf in _flat_leaves(to_state_dict(target)).items()
    if isinstance(leaf, jax.ShapeDtypeStruct)
    and getattr(leaf, 'sharding', None) is not None
  }


def tensor_reader(file, node):
  """A reader (see ``_place``) of a tensor node of the tree."""
  name = node['tensor']

  def read(index):
    return file.read(name, index)

  dtype = _tree.stored_dtype(node)
  if dtype is None:
    return read, file.shape(name)
  shape = tuple(node['shape'])
  return _place.as_bytes_of(read, dtype, shape), shape


def _load(file, sharded, key, node):
  """The array of tensor ``node`` at state-dict path ``key``; on its
  device slices when ``sharded`` (path -> ShapeDtypeStruct) names it."""
  read, shape = tensor_reader(file, node)
  want = sharded.get(key)
  if 'prng_impl' in node:  # key data, wrapped, then placed whole
    import jax

    keys = jax.random.wrap_key_data(
      _place.place(read, shape), impl=node['prng_impl']
    )
    if want is None:
      return keys
    return jax.device_put(keys, _place.concrete(want.sharding))
  if want is None:
    return _place.place(read, shape)
  if tuple(want.shape) != tuple(shape):
    raise ValueError(
      f'Checkpoint array {".".join(map(str, key))!r} has shape '
      f'{tuple(shape)} but the target asks for {tuple(want.shape)}.'
    )
  return _place.place(read, shape, want.dtype, want.sharding)


class SafetensorsBackend(CheckpointBackend):
  """Checkpoints as ``{prefix}{step}/model.safetensors``.

  A process-0 backend (``multiprocess`` is False): arrays spread over
  several processes need the Orbax backend.

  >>> import os, tempfile
  >>> import numpy as np
  >>> from flax_safetensors import safetensors_backend
  >>> d = tempfile.mkdtemp()
  >>> path = safetensors_backend.save(d, 3, {'w': np.arange(2), 'lr': 0.1})
  >>> sorted(os.listdir(path))
  ['model.safetensors']
  >>> safetensors_backend.steps(d), safetensors_backend.restore(d)
  ([3], {'w': array([0, 1]), 'lr': 0.1})
  """

  name = 'safetensors'

  def snapshot(self, target):
    # Encoding copies every array: later changes to ``target`` do not reach
    # a save running in the background.
    return _tree.encode(to_state_dict(target))

  def write(self, path, payload) -> None:
    from safetensors.numpy import save_file

    tensors, metadata = payload
    os.mkdir(path)
    file = os.path.join(path, CHECKPOINT_FILE)
    save_file(tensors, file, metadata=metadata)
    _fsync(file)
    _fsync(path)

  def read(self, path, target=None):
    path = os.fspath(path)
    file = os.path.join(path, CHECKPOINT_FILE) if os.path.isdir(path) else path
    sharded = {} if target is None else _abstract_sharded(target)
    with _files.SafetensorsFile(file) as f:
      try:
        tree = _tree.parse(f.metadata)
      except ValueError as e:
        raise _files.corrupted(
          file, f'its tree metadata is damaged: {e}'
        ) from None
      if tree is None:  # a file from elsewhere: its names nest at dots
        tree = _tree.tree_of_names(f.names())
      try:
        state = _tree.decode(tree, functools.partial(_load, f, sharded))
      except (KeyError, TypeError, IndexError) as e:
        raise _files.corrupted(
          file, f'its tree metadata is damaged: {e}'
        ) from None
    if target is None:
      return state
    return restore_abstract_leaves(target, from_state_dict(target, state))

  def is_checkpoint(self, path) -> bool:
    path = os.fspath(path)
    if os.path.isdir(path):
      return os.path.isfile(os.path.join(path, CHECKPOINT_FILE))
    return _files.looks_like_safetensors(path)


safetensors_backend = SafetensorsBackend()
