"""Building blocks for checkpoint backends that store msgpack files.

``flax.training.checkpoints`` and third-party backends use these to list,
read and write checkpoint files the way the built-in msgpack backend does.

>>> from flax.serialization import backend_utils
>>> backend_utils.parse_step('12'), backend_utils.parse_step('0.5')
(12, 0.5)
"""

from flax.serialization._backend import CheckpointBackend
from flax.serialization._backend import CheckpointCorruptedError
from flax.serialization._backend import MsgpackBackend
from flax.serialization._backend import atomic_write
from flax.serialization._backend import ensure_directory
from flax.serialization._backend import list_steps
from flax.serialization._backend import load_msgpack_file
from flax.serialization._backend import msgpack_backend
from flax.serialization._backend import parse_step
from flax.serialization._backend import restore_abstract_leaves
from flax.serialization._encode import encode_pieces

__all__ = [
  'CheckpointBackend',
  'CheckpointCorruptedError',
  'MsgpackBackend',
  'atomic_write',
  'encode_pieces',
  'ensure_directory',
  'list_steps',
  'load_msgpack_file',
  'msgpack_backend',
  'parse_step',
  'restore_abstract_leaves',
]
