"""flax.serialization: state dicts, msgpack bytes and checkpoint backends.

A state dict is a nested dict of string keys that describes an object:
``to_state_dict`` makes one, ``from_state_dict`` restores an object of the
structure of a target from one. ``to_bytes`` / ``from_bytes`` add Flax's
msgpack wire format on top, so bytes written by Flax restore here and the
other way round.

>>> import numpy as np
>>> from flax import serialization
>>> data = serialization.to_bytes({'a': np.ones(2, np.float32), 'b': 3})
>>> data
b'\\x82\\xa1a\\xc7\\x15\\x01\\x93\\x91\\x02\\xa7float32\\xc4\\x08\\x00\\x00\\x80?\\x00\\x00\\x80?\\xa1b\\x03'
>>> serialization.from_bytes({'a': np.zeros(2, np.float32), 'b': 0}, data)
{'a': array([1., 1.], dtype=float32), 'b': 3}

The registry of state-dict handlers is the one of ``flax.core.state_dict``
(this module re-exports it). Checkpoint backends (``msgpack`` built in,
others through the ``flax_checkpoint_backends`` plugin hook) implement
``CheckpointBackend``; ``flax.plugins.select_backend('checkpoint', name)``
returns one.
"""

from flax.core.state_dict import current_path
from flax.core.state_dict import from_state_dict
from flax.core.state_dict import is_serializable
from flax.core.state_dict import register_serialization_state
from flax.core.state_dict import to_state_dict
from flax.serialization._backend import CheckpointBackend
from flax.serialization._backend import CheckpointCorruptedError
from flax.serialization._backend import MsgpackBackend
from flax.serialization._backend import atomic_write
from flax.serialization._backend import msgpack_backend
from flax.serialization._bytes import from_bytes
from flax.serialization._bytes import to_bytes
from flax.serialization._decode import MsgpackDecodeError
from flax.serialization._decode import msgpack_restore
from flax.serialization._encode import msgpack_serialize

# Private names of Flax's module that code outside Flax uses.
from flax.core.state_dict import _STATE_DICT_REGISTRY as _STATE_DICT_REGISTRY  # noqa: E402
from flax.core.state_dict import _dict_state_dict as _dict_state_dict  # noqa: E402
from flax.core.state_dict import _is_namedtuple as _is_namedtuple  # noqa: E402
from flax.core.state_dict import _list_state_dict as _list_state_dict  # noqa: E402
from flax.core.state_dict import (
  _namedtuple_state_dict as _namedtuple_state_dict,
)  # noqa: E402
from flax.core.state_dict import _restore_dict as _restore_dict  # noqa: E402
from flax.core.state_dict import _restore_list as _restore_list  # noqa: E402
from flax.core.state_dict import _restore_namedtuple as _restore_namedtuple  # noqa: E402
from flax.serialization._helpers import _MsgpackExtType as _MsgpackExtType  # noqa: E402
from flax.serialization._helpers import (  # noqa: E402
  _chunk_array_leaves_in_place as _chunk_array_leaves_in_place,
)
from flax.serialization._helpers import _msgpack_ext_pack as _msgpack_ext_pack  # noqa: E402
from flax.serialization._helpers import (
  _msgpack_ext_unpack as _msgpack_ext_unpack,
)  # noqa: E402
from flax.serialization._helpers import (
  _ndarray_from_bytes as _ndarray_from_bytes,
)  # noqa: E402
from flax.serialization._helpers import _ndarray_to_bytes as _ndarray_to_bytes  # noqa: E402
from flax.serialization._helpers import (  # noqa: E402
  _unchunk_array_leaves_in_place as _unchunk_array_leaves_in_place,
)

# Arrays larger than this many bytes are split into chunks when serialized.
MAX_CHUNK_SIZE = 2**30

__all__ = [
  'MAX_CHUNK_SIZE',
  'CheckpointBackend',
  'CheckpointCorruptedError',
  'MsgpackBackend',
  'MsgpackDecodeError',
  'atomic_write',
  'current_path',
  'from_bytes',
  'from_state_dict',
  'is_serializable',
  'msgpack_backend',
  'msgpack_restore',
  'msgpack_serialize',
  'register_serialization_state',
  'to_bytes',
  'to_state_dict',
]
