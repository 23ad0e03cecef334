"""Saving and restoring checkpoints of pytrees.

Checkpoint ``step`` is stored as ``{ckpt_dir}/{prefix}{step}``: a msgpack
file (Flax's legacy format) or an Orbax directory. The format is chosen per
call: an ``orbax_checkpointer`` or ``backend`` argument, else the innermost
``flax.plugins.use_backend('checkpoint', name)`` block, else the
``flax_checkpoint_backend`` config flag, else Orbax when
``flax.config.flax_use_orbax_checkpointing`` is set and orbax-checkpoint is
installed, else msgpack. Restoring detects the format of what it finds.

Saves are atomic: the data is written to a temporary file of the save's
own, flushed to disk and moved into place, so a save killed at any point
leaves the previous checkpoints restorable. Processes saving into one
directory at once are serialized by a lock on it: each step's file holds
that step's data, and a save whose step is by then outdated raises
``InvalidCheckpointError``.

>>> import os, tempfile
>>> import flax
>>> from flax.training import checkpoints
>>> d = tempfile.mkdtemp()
>>> with flax.config.temp_flip_flag('use_orbax_checkpointing', False):
...   path = checkpoints.save_checkpoint(d, {'w': [1, 2]}, step=3)
>>> os.path.basename(path), checkpoints.available_steps(d)
('checkpoint_3', [3])
>>> checkpoints.restore_checkpoint(d, target={'w': [0, 0]})
{'w': [1, 2]}
"""

import collections
import concurrent.futures
import logging
import os
import re
import shutil

from flax import errors
from flax.core import frozen_dict
from flax.serialization import backend_utils as backend_lib
from flax.serialization import from_state_dict
from flax.serialization.backend_utils import encode_pieces
from flax.serialization import to_state_dict
from flax.training import _publish

# As in Flax, importing this module imports Orbax when it is installed, so
# that user code can use ``orbax.checkpoint`` after it (``ocp`` here).
try:
  import orbax.checkpoint as ocp
  from flax.training import orbax_utils
except ImportError:  # orbax-checkpoint is the optional extra ``[orbax]``.
  ocp = None
  orbax_utils = None

__all__ = [
  'AsyncManager',
  'available_steps',
  'convert_pre_linen',
  'latest_checkpoint',
  'natural_sort',
  'restore_checkpoint',
  'save_checkpoint',
  'save_checkpoint_multiprocess',
]

logger = logging.getLogger(__name__)

# A signed float or integer, as in 'checkpoint_-1.5e3'.
SIGNED_FLOAT_RE = re.compile(r'([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)')
UNSIGNED_FLOAT_RE = re.compile(r'((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)')
MODULE_NUM_RE = re.compile(r'(.*)_([0-9]+)$')
# Suffix of the directories that hold multiprocess arrays (legacy).
MP_ARRAY_POSTFIX = '_gda'


def natural_sort(file_list, signed: bool = True):
  """Sorts strings so that the numbers in them compare as numbers.

  >>> from flax.training.checkpoints import natural_sort
  >>> natural_sort(['ckpt_0.01', 'ckpt_0.1', 'ckpt_0.001'])
  ['ckpt_0.001', 'ckpt_0.01', 'ckpt_0.1']
  >>> natural_sort(['ckpt_1e5', 'ckpt_-1.0', 'ckpt_1.0'])
  ['ckpt_-1.0', 'ckpt_1.0', 'ckpt_1e5']

  Args:
    file_list: the strings.
    signed: whether a leading ``-`` or ``+`` belongs to a number.
  """
  float_re = SIGNED_FLOAT_RE if signed else UNSIGNED_FLOAT_RE

  def key(s):
    # Numbers sort before text at the same position.
    parts = float_re.split(s)
    return [
      (0, float(p), '') if float_re.fullmatch(p) else (1, 0.0, p) for p in parts
    ]

  return sorted(file_list, key=key)


def safe_normpath(path) -> str:
  """``os.path.normpath`` that keeps URLs such as ``gs://bucket/dir``."""
  path = os.fspath(path)
  scheme, sep, rest = path.partition('://')
  if sep:
    return f'{scheme}://{os.path.normpath(rest)}'
  return os.path.normpath(path)


def _checkpoint_path(ckpt_dir: str, step, prefix: str) -> str:
  return os.path.join(ckpt_dir, f'{prefix}{step}')


def _all_steps(ckpt_dir: str, prefix: str) -> list:
  """Steps of every checkpoint (file or directory), in increasing order."""
  return backend_lib.list_steps(ckpt_dir, prefix)


def latest_checkpoint(ckpt_dir, prefix: str = 'checkpoint_'):
  """Returns the path of the latest checkpoint in ``ckpt_dir``, or None.

  Steps sort numerically (``checkpoint_0.1`` after ``checkpoint_0.01``);
  temporary files and ``*_gda`` directories are ignored.

  Args:
    ckpt_dir: the directory.
    prefix: the file-name prefix of the checkpoints.
  """
  ckpt_dir = safe_normpath(ckpt_dir)
  steps = _all_steps(ckpt_dir, prefix)
  if not steps:
    return None
  return _path_of_step(ckpt_dir, steps[-1], prefix)


def _path_of_step(ckpt_dir, step, prefix):
  # The file name as written (``1.0`` and ``1e0`` parse to the same step).
  for name in os.listdir(ckpt_dir):
    if name.startswith(prefix):
      if backend_lib.parse_step(name[len(prefix) :]) == step:
        return os.path.join(ckpt_dir, name)
  return _checkpoint_path(ckpt_dir, step, prefix)


def available_steps(ckpt_dir, prefix: str = 'checkpoint_', step_type=int):
  """Returns the steps of the checkpoints in ``ckpt_dir``, sorted.

  Args:
    ckpt_dir: the directory.
    prefix: the file-name prefix of the checkpoints.
    step_type: the type to convert each step to (``int`` or ``float``).
  """
  return [step_type(s) for s in _all_steps(safe_normpath(ckpt_dir), prefix)]


class AsyncManager:
  """Runs checkpoint writes in a background thread, one at a time.

  Pass it as ``async_manager`` to ``save_checkpoint``; call
  ``wait_previous_save()`` before reading what was saved.

  Args:
    max_workers: the number of background threads.
  """

  def __init__(self, max_workers: int = 1):
    self.executor = concurrent.futures.ThreadPoolExecutor(
      max_workers=max_workers, thread_name_prefix='flax-checkpoint'
    )
    self.save_future = None

  def wait_previous_save(self):
    """Blocks until the last save is done; re-raises its error, if any."""
    future, self.save_future = self.save_future, None
    if future is not None:
      if not future.done():
        logger.info('Waiting for the previous asynchronous save to finish.')
      future.result()

  def save_async(self, task):
    """Runs ``task()`` in the background after the previous save."""
    self.wait_previous_save()
    self.save_future = self.executor.submit(task)


# -- choosing a backend -------------------------------------------------------


def _orbax_installed() -> bool:
  import importlib.util

  try:
    return importlib.util.find_spec('orbax.checkpoint') is not None
  except (ImportError, ValueError):
    return False


def _backend_by_name(name):
  from flax import plugins

  if name == 'orbax':
    from flax.training import _orbax

    return _orbax.OrbaxBackend()
  return plugins.select_backend('checkpoint', name)


def _requested_backend_name():
  """The backend named by a ``use_backend`` block or the config flag."""
  from flax import plugins

  return plugins.requested_backend('checkpoint')


def _choose_backend(backend=None, orbax_checkpointer=None):
  if backend is not None:
    return _backend_by_name(backend) if isinstance(backend, str) else backend
  if orbax_checkpointer is not None:
    from flax.training import _orbax

    return _orbax.OrbaxBackend(orbax_checkpointer)
  name = _requested_backend_name()
  if name is not None:
    return _backend_by_name(name)
  from flax import config

  if config.flax_use_orbax_checkpointing and _orbax_installed():
    from flax.training import _orbax

    return _orbax.OrbaxBackend()
  return backend_lib.msgpack_backend


def _is_file_backend(backend) -> bool:
  from flax.training import _orbax

  return isinstance(backend, (backend_lib.MsgpackBackend, _orbax.OrbaxBackend))


# -- saving ---------------------------------------------------------------------


def _check_overwrite(ckpt_dir, step, prefix, backend):
  """Raises if checkpoint ``step`` or a later one exists."""
  if _is_file_backend(backend):
    steps = _all_steps(ckpt_dir, prefix)
  else:
    steps = backend.steps(ckpt_dir, prefix=prefix)
  if steps and (step in steps or step < steps[-1]):
    raise errors.InvalidCheckpointError(
      _checkpoint_path(ckpt_dir, step, prefix), step
    )


def _delete_path(path):
  if os.path.isdir(path):
    shutil.rmtree(path)
  elif os.path.exists(path):
    os.remove(path)


def _remove_invalid_ckpts(
  ckpt_dir, step, prefix, keep, overwrite, keep_every_n_steps, backend
):
  """Deletes checkpoints after ``step`` (if overwriting) and old ones."""
  file_based = _is_file_backend(backend)
  if file_based:
    steps = _all_steps(ckpt_dir, prefix)

    def delete(s):
      _delete_path(_path_of_step(ckpt_dir, s, prefix))
  else:
    steps = backend.steps(ckpt_dir, prefix=prefix)

    def delete(s):
      backend.delete(ckpt_dir, s, prefix=prefix)

  if overwrite and step in steps:
    index = steps.index(step) + 1
    for newer in steps[index:]:
      logger.info('Removing checkpoint at step %s (newer than %s)', newer, step)
      delete(newer)
    steps = steps[:index]
  if keep is None or len(steps) <= keep:
    return
  last_kept = -float('inf')
  # As in Flax, ``keep=0`` keeps everything (``steps[:-0]`` is empty).
  for old in steps[:-keep] if keep else []:
    # As in Flax, step 0 is never kept by ``keep_every_n_steps``.
    if keep_every_n_steps and old and old - last_kept >= keep_every_n_steps:
      last_kept = old
      continue
    logger.info('Removing checkpoint at step %s', old)
    delete(old)


def _save(
  ckpt_dir,
  target,
  step,
  prefix,
  keep,
  overwrite,
  keep_every_n_steps,
  async_manager,
  orbax_checkpointer,
  backend,
  write_files=True,
):
  ckpt_dir = safe_normpath(ckpt_dir)
  if async_manager is not None:
    async_manager.wait_previous_save()
  backend = _choose_backend(backend, orbax_checkpointer)
  ckpt_path = _checkpoint_path(ckpt_dir, step, prefix)
  if not write_files:
    return ckpt_path
  backend_lib.ensure_directory(ckpt_dir)
  if not overwrite:
    _check_overwrite(ckpt_dir, step, prefix, backend)
  logger.info('Saving checkpoint at step %s to %s', step, ckpt_path)

  if isinstance(backend, backend_lib.MsgpackBackend):
    pieces = encode_pieces(to_state_dict(target))
    if async_manager is not None:
      # Copy now: later changes to ``target`` must not reach the file.
      pieces = [b''.join(pieces)]

    def task():
      # A temporary file of this save's own; then, under the directory
      # lock, check again (another process may have saved meanwhile),
      # publish and prune.
      tmp = _publish.temp_path(ckpt_path)
      try:
        _publish.write_temp(tmp, pieces)
        with _publish.directory_lock(ckpt_dir):
          if not overwrite:
            _check_overwrite(ckpt_dir, step, prefix, backend)
          try:
            _publish.publish(tmp, ckpt_path, overwrite=overwrite)
          except FileExistsError:
            raise errors.InvalidCheckpointError(ckpt_path, step) from None
          _remove_invalid_ckpts(
            ckpt_dir, step, prefix, keep, overwrite, keep_every_n_steps, backend
          )
      finally:
        _publish.remove_quietly(tmp)
  else:

    def task():
      backend.save(ckpt_dir, step, target, prefix=prefix, overwrite=overwrite)
      _remove_invalid_ckpts(
        ckpt_dir, step, prefix, keep, overwrite, keep_every_n_steps, backend
      )

  if async_manager is not None:
    async_manager.save_async(task)
  else:
    task()
  return ckpt_path


def save_checkpoint(
  ckpt_dir,
  target,
  step,
  prefix: str = 'checkpoint_',
  keep: int = 1,
  overwrite: bool = False,
  keep_every_n_steps=None,
  async_manager=None,
  orbax_checkpointer=None,
  *,
  backend=None,
) -> str:
  """Saves ``target`` as checkpoint ``step`` in ``ckpt_dir``.

  Args:
    ckpt_dir: the directory (created if missing; relative paths are fine).
    target: any pytree that ``flax.serialization`` handles: dicts, lists,
      dataclasses, ``TrainState``, arrays, numbers, strings.
    step: the step, an int or a float.
    prefix: the file-name prefix.
    keep: how many of the latest checkpoints to keep.
    overwrite: allow saving at a step that is not newer than the latest
      checkpoint; checkpoints after ``step`` are then deleted.
    keep_every_n_steps: also keep older checkpoints this many steps apart.
    async_manager: an ``AsyncManager``; the write then happens in the
      background.
    orbax_checkpointer: an Orbax checkpointer to save with.
    backend: a checkpoint backend or its name (``'msgpack'``, ``'orbax'``
      or a plugin's).

  Returns:
    The path of the checkpoint, ``os.path.join(ckpt_dir, f'{prefix}{step}')``.

  Raises:
    flax.errors.InvalidCheckpointError: if checkpoint ``step`` or a later one
      exists and ``overwrite`` is False.
    NotADirectoryError: if ``ckpt_dir`` is a file.
  """
  return _save(
    ckpt_dir,
    target,
    step,
    prefix,
    keep,
    overwrite,
    keep_every_n_steps,
    async_manager,
    orbax_checkpointer,
    backend,
  )


def _has_multiprocess_arrays(target) -> bool:
  import jax

  return any(
    isinstance(x, jax.Array) and not x.is_fully_addressable
    for x in jax.tree.leaves(target)
  )


def save_checkpoint_multiprocess(
  ckpt_dir,
  target,
  step,
  prefix: str = 'checkpoint_',
  keep: int = 1,
  overwrite: bool = False,
  keep_every_n_steps=None,
  async_manager=None,
  gda_manager=None,
  orbax_checkpointer=None,
  *,
  backend=None,
) -> str:
  """Saves a checkpoint from every process of a multi-process job.

  Process 0 writes the files and cleans up old checkpoints. Arrays spread
  over several processes need the Orbax backend.

  Args:
    ckpt_dir, target, step, prefix, keep, overwrite, keep_every_n_steps,
    async_manager, orbax_checkpointer, backend: as for ``save_checkpoint``.
    gda_manager: legacy argument, not used (JAX removed its
      GlobalAsyncCheckpointManager); use Orbax.

  Returns:
    The path of the checkpoint.

  Raises:
    flax.errors.MPACheckpointingRequiredError: if ``target`` holds arrays
      of several processes and the backend is not Orbax.
  """
  import jax

  del gda_manager
  chosen = _choose_backend(backend, orbax_checkpointer)
  from flax.training import _orbax

  is_orbax = isinstance(chosen, _orbax.OrbaxBackend)
  if not is_orbax and _has_multiprocess_arrays(target):
    raise errors.MPACheckpointingRequiredError(
      _checkpoint_path(safe_normpath(ckpt_dir), step, prefix), step
    )
  # Orbax coordinates the processes itself; the msgpack file is written by
  # process 0 only.
  write = is_orbax or jax.process_index() == 0
  return _save(
    ckpt_dir,
    target,
    step,
    prefix,
    keep,
    overwrite,
    keep_every_n_steps,
    async_manager,
    None,
    chosen,
    write_files=write,
  )


# -- restoring -------------------------------------------------------------------


def _is_orbax_dir(path: str) -> bool:
  from flax.training import _orbax

  return _orbax.is_orbax_checkpoint(path)


def restore_checkpoint(
  ckpt_dir,
  target,
  step=None,
  prefix: str = 'checkpoint_',
  parallel: bool = True,
  gda_manager=None,
  allow_partial_mpa_restoration: bool = False,
  orbax_checkpointer=None,
  orbax_transforms=None,
  *,
  backend=None,
):
  """Restores the latest checkpoint (or checkpoint ``step``).

  Args:
    ckpt_dir: a checkpoint directory, or the path of one checkpoint.
    target: an object with the structure to restore into (its leaves are
      only used for structure, or, for ``jax.ShapeDtypeStruct`` leaves, for
      shape, dtype and sharding). ``None`` gives the raw state dict, where
      lists are dicts ``{'0': ..., '1': ...}``.
    step: the step to restore; ``ckpt_dir`` must then be a directory.
    prefix: the file-name prefix.
    parallel: accepted for compatibility (files are read in one pass).
    gda_manager: legacy argument, not used.
    allow_partial_mpa_restoration: legacy argument, not used.
    orbax_checkpointer: the Orbax checkpointer to restore Orbax checkpoints
      with.
    orbax_transforms: Orbax ``transforms`` for restoring into a target of a
      different structure (``{}`` fills missing fields from the target).
    backend: a checkpoint backend or its name, to restore from a format
      that is not detected from the files.

  Returns:
    The restored object, or ``target`` unchanged when there is no
    checkpoint.

  Raises:
    ValueError: if ``step`` is given and that checkpoint does not exist.
    flax.serialization.CheckpointCorruptedError: if the file is truncated or
      corrupted.
  """
  del parallel, gda_manager, allow_partial_mpa_restoration
  ckpt_dir = safe_normpath(ckpt_dir)
  requested = backend if backend is not None else _requested_backend_name()
  if requested is not None and orbax_checkpointer is None:
    chosen = _choose_backend(requested)
    if not _is_file_backend(chosen):
      try:
        return chosen.restore(ckpt_dir, step, target, prefix=prefix)
      except FileNotFoundError:
        if step is not None:
          raise
        return target
  if step is not None:
    ckpt_path = _checkpoint_path(ckpt_dir, step, prefix)
    if not os.path.exists(ckpt_path):
      raise ValueError(f'Matching checkpoint not found: {ckpt_path}')
  else:
    if not os.path.exists(ckpt_dir):
      logger.info('Found no checkpoint directory at %s', ckpt_dir)
      return target
    if os.path.isdir(ckpt_dir) and not _is_orbax_dir(ckpt_dir):
      ckpt_path = latest_checkpoint(ckpt_dir, prefix)
      if ckpt_path is None:
        logger.info(
          'Found no checkpoints in %s with prefix %s', ckpt_dir, prefix
        )
        return target
    else:
      ckpt_path = ckpt_dir
  logger.info('Restoring checkpoint from %s', ckpt_path)
  if os.path.isdir(ckpt_path):
    from flax.training import _orbax

    restored = _orbax.restore_path(
      ckpt_path, target, orbax_checkpointer, orbax_transforms
    )
    restored = to_state_dict(restored)
    if target is None:
      return restored
    return from_state_dict(target, restored)
  state = backend_lib.load_msgpack_file(ckpt_path)
  if target is None:
    return state
  return backend_lib.restore_abstract_leaves(
    target, from_state_dict(target, state)
  )


def convert_pre_linen(params):
  """Renames pre-Linen parameter names to Linen ones.

  Pre-Linen modules were numbered across classes (``Conv_0``, ``Dense_1``);
  Linen numbers each class separately (``Conv_0``, ``Dense_0``). Nested
  dicts are converted too; Linen trees are left as they are.

  >>> from flax.training.checkpoints import convert_pre_linen
  >>> convert_pre_linen({'Conv_0': 1, 'Dense_1': 2, 'Dense_2': 3})
  {'Conv_0': 1, 'Dense_0': 2, 'Dense_1': 3}

  Args:
    params: a parameter tree (dict or FrozenDict).

  Returns:
    The renamed tree, of the same container type.
  """
  if not isinstance(params, (dict, frozen_dict.FrozenDict)):
    return params
  per_class = collections.Counter()

  def linen_name(name):
    numbered = MODULE_NUM_RE.match(name)
    if numbered is None:
      return name
    prefix = numbered.group(1)
    index = per_class[prefix]
    per_class[prefix] += 1
    return f'{prefix}_{index}'

  # Renumber in natural order, so 'Dense_2' comes before 'Dense_10'.
  renamed = {
    linen_name(name): convert_pre_linen(params[name])
    for name in natural_sort(params)
  }
  if isinstance(params, frozen_dict.FrozenDict):
    return frozen_dict.FrozenDict(renamed)
  return renamed
