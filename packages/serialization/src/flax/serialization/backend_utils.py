"""Building blocks for checkpoint backends that store msgpack files.

Third-party backends use these to list, read, write and publish
checkpoints the way the built-in ones do.

>>> from flax.serialization import backend_utils
>>> backend_utils.parse_step('12'), backend_utils.parse_step('0.5')
(12, 0.5)
"""

from flax.serialization._backend import CheckpointBackend
from flax.serialization._backend import CheckpointCorruptedError
from flax.serialization._backend import MsgpackBackend
from flax.serialization._backend import PendingCheckpoint
from flax.serialization._backend import atomic_write
from flax.serialization._backend import directory_lock
from flax.serialization._backend import ensure_directory
from flax.serialization._backend import list_entries
from flax.serialization._backend import list_steps
from flax.serialization._backend import load_msgpack_file
from flax.serialization._backend import move_into_place
from flax.serialization._backend import msgpack_backend
from flax.serialization._backend import parse_step
from flax.serialization._backend import remove_path
from flax.serialization._backend import restore_abstract_leaves
from flax.serialization._backend import unique_temp_path
from flax.serialization._encode import encode_pieces

__all__ = [
  'CheckpointBackend',
  'CheckpointCorruptedError',
  'MsgpackBackend',
  'PendingCheckpoint',
  'atomic_write',
  'directory_lock',
  'encode_pieces',
  'ensure_directory',
  'list_entries',
  'list_steps',
  'load_msgpack_file',
  'move_into_place',
  'msgpack_backend',
  'parse_step',
  'remove_path',
  'restore_abstract_leaves',
  'unique_temp_path',
]
