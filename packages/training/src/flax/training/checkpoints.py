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
that step's data. Without ``overwrite``, a msgpack save whose step is not
newer than the latest checkpoint raises ``InvalidCheckpointError``; an
Orbax save may add an older step and raises ``ValueError`` only when that
step exists (as Orbax does).

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

from flax import config
from flax import errors
from flax.core import frozen_dict
from flax.serialization import backend_utils as backend_lib

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
# The name suffix of multiprocess-array entries in checkpoints of older
# Flax versions (a public name code written for Flax 0.12.8 may import).
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


def latest_checkpoint(ckpt_dir, prefix: str = 'checkpoint_'):
  """Returns the path of the latest checkpoint in ``ckpt_dir``, or None.

  Steps sort numerically (``checkpoint_0.1`` after ``checkpoint_0.01``);
  temporary files are ignored.

  Args:
    ckpt_dir: the directory.
    prefix: the file-name prefix of the checkpoints.
  """
  ckpt_dir = safe_normpath(ckpt_dir)
  entries = backend_lib.list_entries(ckpt_dir, prefix)
  if not entries:
    return None
  # The name as written (``1.0`` and ``1e0`` are the same step).
  return os.path.join(ckpt_dir, entries[-1][1])


def available_steps(ckpt_dir, prefix: str = 'checkpoint_', step_type=int):
  """Returns the steps of the checkpoints in ``ckpt_dir``, sorted.

  Args:
    ckpt_dir: the directory.
    prefix: the file-name prefix of the checkpoints.
    step_type: the type to convert each step to (``int`` or ``float``).
  """
  steps = backend_lib.list_steps(safe_normpath(ckpt_dir), prefix)
  return [step_type(s) for s in steps]


def _all_checkpoints(ckpt_dir, prefix: str = 'checkpoint_') -> list[str]:
  """The paths of the checkpoints in ``ckpt_dir``, oldest step first."""
  ckpt_dir = safe_normpath(ckpt_dir)
  entries = backend_lib.list_entries(ckpt_dir, prefix)
  return [os.path.join(ckpt_dir, name) for _, name in entries]


def _allowempty_listdir(path: str):
  """The names in folder ``path``; an empty list if it does not exist."""
  try:
    return os.listdir(path)
  except FileNotFoundError:
    return []


def _is_multiprocess_array(value) -> bool:
  """Whether ``value`` is a ``jax.Array`` spread over several processes."""
  import jax

  return isinstance(value, jax.Array) and not value.is_fully_addressable


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


def _orbax_backend(checkpointer=None, transforms=None):
  from flax.training import _orbax

  if checkpointer is None and transforms is None:
    return _orbax.orbax_backend
  return _orbax.OrbaxBackend(checkpointer, transforms)


def _backend_by_name(name):
  from flax import plugins

  if name == 'orbax':
    return _orbax_backend()
  return plugins.select_backend('checkpoint', name)


def _choose_backend(backend=None, orbax_checkpointer=None):
  """The backend a save uses (see the module docstring for the order)."""
  from flax import plugins

  if backend is not None:
    return _backend_by_name(backend) if isinstance(backend, str) else backend
  if orbax_checkpointer is not None:
    return _orbax_backend(orbax_checkpointer)
  name = plugins.requested_backend('checkpoint')
  if name is not None:
    return _backend_by_name(name)
  if config.flax_use_orbax_checkpointing and _orbax_installed():
    return _orbax_backend()
  return backend_lib.msgpack_backend


# -- saving ---------------------------------------------------------------------


def _check_not_outdated(ckpt_dir, step, prefix, backend):
  """Raises if checkpoint ``step`` exists or, unless the backend allows
  older steps, a later one does."""
  if backend.allows_older_steps:
    path = backend.path(ckpt_dir, step, prefix=prefix)
    if os.path.lexists(path):
      raise ValueError(
        f'Destination {path} already exists; pass overwrite=True to replace it.'
      )
    return
  latest = backend.latest_step(ckpt_dir, prefix=prefix)
  if latest is not None and step <= latest:
    raise errors.InvalidCheckpointError(
      backend.path(ckpt_dir, step, prefix=prefix), step
    )


def _prune(
  ckpt_dir, step, prefix, keep, overwrite, keep_every_n_steps, backend
):
  """Deletes checkpoints after ``step`` (if overwriting) and old ones."""
  steps = backend.steps(ckpt_dir, prefix=prefix)
  if overwrite and step in steps:
    newer = steps[steps.index(step) + 1 :]
    for s in newer:
      logger.info('Removing checkpoint at step %s (newer than %s)', s, step)
      backend.delete(ckpt_dir, s, prefix=prefix)
    steps = steps[: len(steps) - len(newer)]
  # ``keep=0`` keeps everything, as ``keep=None`` does.
  if not keep or len(steps) <= keep:
    return
  last_kept = -float('inf')
  for old in steps[:-keep]:
    # Step 0 is never one of the ``keep_every_n_steps`` checkpoints.
    if keep_every_n_steps and old and old - last_kept >= keep_every_n_steps:
      last_kept = old
    else:
      logger.info('Removing checkpoint at step %s', old)
      backend.delete(ckpt_dir, old, prefix=prefix)


def _save(
  ckpt_dir,
  target,
  step,
  prefix,
  keep,
  overwrite,
  keep_every_n_steps,
  async_manager,
  backend,
  *,
  writes=True,
  publishes=True,
  shared_temp=False,
):
  """Saves through the backend protocol, the same way for every backend.

  The data is captured now (``snapshot``) and written under a temporary
  name of this save's own (``stage``); then, holding the directory lock,
  the step is checked again (another process may have saved meanwhile),
  published in one rename and old checkpoints pruned. A failure at any
  point leaves the published checkpoints as they were.
  """
  ckpt_dir = safe_normpath(ckpt_dir)
  if async_manager is not None:
    async_manager.wait_previous_save()
  ckpt_path = backend.path(ckpt_dir, step, prefix=prefix)
  if not writes:
    return ckpt_path
  backend_lib.ensure_directory(ckpt_dir)
  if not overwrite:
    _check_not_outdated(ckpt_dir, step, prefix, backend)
  logger.info('Saving checkpoint at step %s to %s', step, ckpt_path)
  payload = backend.snapshot(target)
  # Processes that write one checkpoint together need one temporary name.
  temp = f'{ckpt_path}.tmp-shared' if shared_temp else None

  def task():
    pending = backend.stage(ckpt_dir, step, payload, prefix=prefix, temp=temp)
    if not publishes:  # another process publishes the shared temporary
      return
    with pending:
      with backend.lock(ckpt_dir):
        if not overwrite:
          _check_not_outdated(ckpt_dir, step, prefix, backend)
        pending.publish(overwrite=overwrite)
        _prune(
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
      checkpoint (msgpack) or that exists (Orbax); checkpoints after
      ``step`` are then deleted.
    keep_every_n_steps: also keep older checkpoints this many steps apart.
    async_manager: an ``AsyncManager``; the write then happens in the
      background.
    orbax_checkpointer: an Orbax checkpointer to save with.
    backend: a checkpoint backend or its name (``'msgpack'``, ``'orbax'``
      or a plugin's).

  Returns:
    The path of the checkpoint, ``os.path.join(ckpt_dir, f'{prefix}{step}')``.

  Raises:
    flax.errors.InvalidCheckpointError: if ``overwrite`` is False and
      checkpoint ``step`` or a later one exists (msgpack).
    ValueError: if ``overwrite`` is False and checkpoint ``step`` exists
      (Orbax).
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
    _choose_backend(backend, orbax_checkpointer),
  )


def _has_multiprocess_arrays(target) -> bool:
  import jax

  return any(map(_is_multiprocess_array, jax.tree.leaves(target)))


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
    ckpt_dir: as for ``save_checkpoint``.
    target: as for ``save_checkpoint``.
    step: as for ``save_checkpoint``.
    prefix: as for ``save_checkpoint``.
    keep: as for ``save_checkpoint``.
    overwrite: as for ``save_checkpoint``.
    keep_every_n_steps: as for ``save_checkpoint``.
    async_manager: as for ``save_checkpoint``.
    gda_manager: legacy argument, not used (JAX removed its
      GlobalAsyncCheckpointManager); use Orbax.
    orbax_checkpointer: as for ``save_checkpoint``.
    backend: as for ``save_checkpoint``.

  Returns:
    The path of the checkpoint.

  Raises:
    flax.errors.MPACheckpointingRequiredError: if ``target`` holds arrays
      of several processes and the backend is not Orbax.
  """
  import jax

  del gda_manager
  chosen = _choose_backend(backend, orbax_checkpointer)
  if not chosen.multiprocess and _has_multiprocess_arrays(target):
    raise errors.MPACheckpointingRequiredError(
      _checkpoint_path(safe_normpath(ckpt_dir), step, prefix), step
    )
  # A multiprocess backend writes one temporary checkpoint with every
  # process; process 0 alone publishes it and prunes old ones.
  lead = jax.process_index() == 0
  together = chosen.multiprocess and jax.process_count() > 1
  path = _save(
    ckpt_dir,
    target,
    step,
    prefix,
    keep,
    overwrite,
    keep_every_n_steps,
    async_manager,
    chosen,
    writes=lead or chosen.multiprocess,
    publishes=lead,
    shared_temp=together,
  )
  if together:
    if async_manager is not None:
      async_manager.wait_previous_save()
    from jax.experimental import multihost_utils

    multihost_utils.sync_global_devices(f'flax checkpoint {path}')
  return path


# -- restoring -------------------------------------------------------------------


def _readers(backend, orbax_checkpointer, orbax_transforms) -> list:
  """The backends that may read a checkpoint, the one asked for first."""
  from flax import plugins

  readers = []
  if orbax_checkpointer is not None or orbax_transforms is not None:
    readers.append(_orbax_backend(orbax_checkpointer, orbax_transforms))
  if backend is None:
    backend = plugins.requested_backend('checkpoint')
  if backend is not None:
    readers.append(_choose_backend(backend))
  readers.append(backend_lib.msgpack_backend)
  if _orbax_installed():
    readers.append(_orbax_backend())
  return readers


def _reader_of(path, readers):
  return next((r for r in readers if r.is_checkpoint(path)), None)


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
  readers = _readers(backend, orbax_checkpointer, orbax_transforms)
  if step is not None:
    ckpt_path = _checkpoint_path(ckpt_dir, step, prefix)
    reader = _reader_of(ckpt_path, readers)
    if reader is None:
      raise ValueError(f'Matching checkpoint not found: {ckpt_path}')
  elif not os.path.exists(ckpt_dir):
    logger.info('Found no checkpoint directory at %s', ckpt_dir)
    return target
  else:
    # ``ckpt_dir`` is one checkpoint, or a directory of them.
    ckpt_path, reader = ckpt_dir, _reader_of(ckpt_dir, readers)
    if reader is None:
      ckpt_path = latest_checkpoint(ckpt_dir, prefix)
      if ckpt_path is None:
        logger.info(
          'Found no checkpoints in %s with prefix %s', ckpt_dir, prefix
        )
        return target
      reader = _reader_of(ckpt_path, readers)
      if reader is None:
        raise ValueError(
          f'{ckpt_path} is not a checkpoint of any known backend '
          f'({", ".join(r.name for r in readers)}).'
        )
  logger.info('Restoring checkpoint from %s', ckpt_path)
  reader.wait()
  return reader.read(ckpt_path, target)


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
