"""``to_bytes`` / ``from_bytes``: state dicts in Flax's msgpack format."""

from flax.core.state_dict import from_state_dict
from flax.core.state_dict import to_state_dict
from flax.serialization._decode import MsgpackDecodeError
from flax.serialization._decode import msgpack_restore
from flax.serialization._encode import msgpack_serialize


def to_bytes(target) -> bytes:
  """Serializes ``target`` (any registered pytree) to msgpack bytes.

  >>> import numpy as np
  >>> from flax import serialization
  >>> serialization.to_bytes([np.int8(7)])
  b'\\x81\\xa10\\xc7\\n\\x03\\x93\\x90\\xa4int8\\xc4\\x01\\x07'

  Args:
    target: the object; its state dict (``to_state_dict``) is written.

  Returns:
    The bytes.
  """
  return msgpack_serialize(to_state_dict(target), in_place=True)


def from_bytes(target, encoded_bytes: bytes):
  """Restores an object of ``target``'s structure from msgpack bytes.

  >>> import numpy as np
  >>> from flax import serialization
  >>> data = serialization.to_bytes({'w': np.arange(2)})
  >>> serialization.from_bytes({'w': None}, data)
  {'w': array([0, 1])}

  Args:
    target: an object with the structure to restore (e.g. freshly
      initialized parameters); it is not changed. ``None`` gives the raw
      state dict.
    encoded_bytes: bytes from ``to_bytes`` (here or in Flax).

  Returns:
    A new object like ``target`` whose arrays are NumPy arrays read from the
    bytes.

  Raises:
    MsgpackDecodeError: when the bytes are truncated, corrupted, not a Flax
      msgpack encoding, or nested too deeply to restore.
  """
  state = msgpack_restore(encoded_bytes)
  try:
    return from_state_dict(target, state)
  except RecursionError:
    raise MsgpackDecodeError(
      'The msgpack data is nested too deeply to restore into the target.'
    ) from None
