"""The Orbax checkpoint backend (orbax-checkpoint is imported on use only).

Orbax wants absolute paths; relative ones are made absolute here, so
``save_checkpoint('tmp/ckpts', ...)`` works with either backend.
"""

import os

from flax.core.state_dict import from_state_dict
from flax.core.state_dict import to_state_dict
from flax.serialization import backend_utils as backend_lib

# Files that mark a directory as an Orbax checkpoint.
_ORBAX_MARKERS = (
  '_CHECKPOINT_METADATA',
  '_METADATA',
  'commit_success.txt',
  'manifest.ocdbt',
  'checkpoint',
)


def ocp():
  """Imports ``orbax.checkpoint``, naming the extra to install if missing."""
  try:
    import orbax.checkpoint as orbax_checkpoint
  except ImportError as e:
    from flax.plugins import install_command

    raise ImportError(
      'The Orbax checkpoint backend needs orbax-checkpoint, the orbax extra '
      f'of flax-training: `{install_command("flax-training", ("orbax",))}` '
      '(or set '
      "flax.config.update('flax_use_orbax_checkpointing', False) to use "
      f'msgpack checkpoints). ({e})'
    ) from e
  return orbax_checkpoint


def is_orbax_checkpoint(path) -> bool:
  """Whether ``path`` is a directory holding one Orbax checkpoint."""
  path = os.fspath(path)
  if not os.path.isdir(path):
    return False
  return any(os.path.exists(os.path.join(path, m)) for m in _ORBAX_MARKERS)


def _default_checkpointer():
  o = ocp()
  return o.Checkpointer(o.PyTreeCheckpointHandler())


def _handler(checkpointer):
  return getattr(checkpointer, '_handler', None)


def _is_pytree_checkpointer(checkpointer) -> bool:
  o = ocp()
  handler = _handler(checkpointer)
  return handler is None or isinstance(
    handler, (o.PyTreeCheckpointHandler, o.StandardCheckpointHandler)
  )


def _is_leaf_target(target) -> bool:
  import jax

  return jax.tree_util.treedef_is_leaf(jax.tree.structure(target))


def _metadata_tree(checkpointer, path):
  meta = checkpointer.metadata(path)
  return getattr(getattr(meta, 'item_metadata', meta), 'tree', None)


def _raw_restore_args(tree):
  """Restore args that give NumPy arrays back."""
  import jax

  o = ocp()
  from orbax.checkpoint import metadata as om

  if tree is None:
    return None

  def args(m):
    if isinstance(m, om.ArrayMetadata):
      return o.RestoreArgs(restore_type=__import__('numpy').ndarray)
    if isinstance(m, om.ScalarMetadata):
      kind = getattr(m.dtype, 'kind', 'f')
      return o.RestoreArgs(restore_type=float if kind in 'fc' else int)
    return o.RestoreArgs()

  return jax.tree.map(args, tree)


def restore_path(path, target=None, checkpointer=None, transforms=None):
  """Restores the Orbax checkpoint at ``path``."""
  from flax.training import orbax_utils

  o = ocp()
  path = os.path.abspath(os.fspath(path))
  checkpointer = checkpointer or _default_checkpointer()
  if not _is_pytree_checkpointer(checkpointer):
    return checkpointer.restore(path, item=target)
  if target is None:
    # as saved: JAX arrays (placed by the saved sharding file, which Orbax
    # warns about), NumPy arrays and Python numbers
    return checkpointer.restore(path)
  restore_args = orbax_utils.restore_args_from_target(target)
  kwargs = {}
  if transforms is not None:
    kwargs['transforms'] = transforms
  try:
    return checkpointer.restore(
      path,
      args=o.args.PyTreeRestore(
        item=target, restore_args=restore_args, **kwargs
      ),
    )
  except ValueError:
    if transforms is not None:
      raise
  # The saved tree differs from the target (other keys, shapes or nesting):
  # read it as saved and place its leaves into the target's structure.
  tree = _metadata_tree(checkpointer, path)
  saved = checkpointer.restore(
    path, args=o.args.PyTreeRestore(restore_args=_raw_restore_args(tree))
  )
  return merge_into_target(target, saved)


_MISSING = object()


def _key_name(key) -> str:
  for attr in ('key', 'idx', 'name'):
    if hasattr(key, attr):
      return str(getattr(key, attr))
  return str(key)


def _lookup(saved, path):
  node = saved
  for key in path:
    name = _key_name(key)
    if isinstance(node, dict) and name in node:
      node = node[name]
    elif isinstance(node, (list, tuple)) and name.isdigit():
      if int(name) >= len(node):
        return _MISSING
      node = node[int(name)]
    else:
      return _MISSING
  if isinstance(node, (dict, list, tuple)):
    return _MISSING
  return node


def merge_into_target(target, saved):
  """``target`` with each leaf replaced by the saved leaf at its path.

  A target leaf whose path the saved tree lacks (or where the saved tree
  has a subtree) keeps its value; saved entries the target has no place
  for are dropped. Saved numbers come back as NumPy values, and as JAX
  arrays where the target leaf is one.
  """
  import jax
  import jax.numpy as jnp
  import numpy as np

  def pick(path, leaf):
    value = _lookup(saved, path)
    if value is _MISSING:
      return leaf
    if isinstance(leaf, jax.Array):
      return jnp.asarray(value)
    if isinstance(value, (int, float, complex, np.generic)):
      return np.asarray(value)
    return value

  return jax.tree_util.tree_map_with_path(pick, target)


class OrbaxBackend(backend_lib.CheckpointBackend):
  """Checkpoints as Orbax directories ``{directory}/{prefix}{step}``.

  Args:
    checkpointer: the Orbax checkpointer to use (default: a synchronous
      ``Checkpointer(PyTreeCheckpointHandler())``).
    transforms: Orbax ``transforms`` used when restoring into a target of a
      different structure.
  """

  name = 'orbax'
  multiprocess = True
  allows_older_steps = True

  def __init__(self, checkpointer=None, transforms=None):
    self.checkpointer = checkpointer
    self.transforms = transforms

  def _checkpointer(self):
    if self.checkpointer is None:
      self.checkpointer = _default_checkpointer()
    return self.checkpointer

  def wait(self):
    """Waits for an asynchronous checkpointer to finish its writes."""
    wait = getattr(self.checkpointer, 'wait_until_finished', None)
    if wait is not None:
      wait()

  def write(self, path, payload) -> None:
    from flax.training import orbax_utils

    o = ocp()
    checkpointer = self._checkpointer()
    self.wait()
    path = os.path.abspath(path)
    if _is_pytree_checkpointer(checkpointer):
      if _is_leaf_target(payload):
        raise ValueError(
          'Orbax backend only accept pytree as save target. To save a '
          'single array or number, use the msgpack backend '
          "(backend='msgpack') or wrap it in a dict."
        )
      save_args = orbax_utils.save_args_from_target(payload)
      checkpointer.save(
        path, args=o.args.PyTreeSave(payload, save_args=save_args), force=True
      )
    else:
      checkpointer.save(path, payload, force=True)
    # The temporary directory must be complete before it is published.
    self.wait()

  def read(self, path, target=None):
    self.wait()
    restored = to_state_dict(
      restore_path(path, target, self.checkpointer, self.transforms)
    )
    if target is None:
      return restored
    return backend_lib.restore_abstract_leaves(
      target, from_state_dict(target, restored)
    )

  def is_checkpoint(self, path) -> bool:
    return is_orbax_checkpoint(path)


orbax_backend = OrbaxBackend()
