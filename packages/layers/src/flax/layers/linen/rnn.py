"""Linen sequence layers: ``RNN`` (a cell scanned over time) and
``Bidirectional``. The cells live in :mod:`flax.layers.linen.recurrent`,
which re-exports these two as well.
"""

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
from jax import random

from flax.core.frozen_dict import FrozenDict
from flax.layers import recurrent as rnn_math
from flax.layers.linen.recurrent import RNNCellBase
from flax.layers.recurrent import flip_sequences
from flax.linen import Module
from flax.linen import scan as _scan

Array = Any
Carry = Any


class RNN(Module):
  """Runs a cell over a sequence with ``nn.scan``.

  Inputs are ``(*batch, time, *features)`` (``(time, *batch, *features)``
  with ``time_major``); outputs keep that layout. The cell's parameters are
  shared across time steps and live under ``cell``.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> x = jnp.ones((10, 50, 32))  # (batch, time, features)
    >>> lstm = nn.RNN(nn.LSTMCell(64))
    >>> variables = lstm.init(jax.random.key(0), x)
    >>> lstm.apply(variables, x).shape  # (batch, time, cell_size)
    (10, 50, 64)

  Attributes:
    cell: an instance of :class:`RNNCellBase`.
    time_major: whether time is the first axis.
    return_carry: return ``(carry, outputs)`` instead of ``outputs``.
    reverse: process the sequence from the end (padding stays at the end).
    keep_order: with ``reverse``, re-reverse the outputs.
    unroll: steps unrolled per scan iteration.
    variable_axes: collections scanned over time.
    variable_broadcast: collections shared over time (``'params'``).
    variable_carry: collections carried over time.
    split_rngs: rng streams split per step.
  """

  cell: RNNCellBase
  time_major: rnn_math.Flag = False
  return_carry: rnn_math.Flag = False
  reverse: rnn_math.Flag = False
  keep_order: rnn_math.Flag = False
  unroll: int = 1
  variable_axes: Mapping[Any, Any] = FrozenDict()
  variable_broadcast: Any = 'params'
  variable_carry: Any = False
  split_rngs: Mapping[Any, bool] = FrozenDict({'params': False})

  def __call__(
    self,
    inputs: Array,
    *,
    initial_carry=None,
    init_key=None,
    seq_lengths=None,
    return_carry: rnn_math.MaybeFlag = None,
    time_major: rnn_math.MaybeFlag = None,
    reverse: rnn_math.MaybeFlag = None,
    keep_order: rnn_math.MaybeFlag = None,
  ):
    """Applies the RNN to the inputs.

    Args:
      inputs: the input sequence.
      initial_carry: the initial carry; if None it is built by
        ``cell.initialize_carry``.
      init_key: PRNG key for ``initialize_carry`` (default
        ``random.key(0)``).
      seq_lengths: ``(*batch,)`` valid lengths; the returned carry is the
        one after each sequence's last valid step (outputs past it are not
        zeroed).
      return_carry, time_major, reverse, keep_order: override the
        attributes.

    Returns:
      The outputs, or ``(carry, outputs)`` with ``return_carry``.
    """
    return_carry, time_major, reverse, keep_order = (
      getattr(self, name) if value is None else value
      for name, value in (
        ('return_carry', return_carry),
        ('time_major', time_major),
        ('reverse', reverse),
        ('keep_order', keep_order),
      )
    )
    n_feature = self.cell.num_feature_axes
    time_axis = 0 if time_major else inputs.ndim - n_feature - 1
    n_batch = inputs.ndim - n_feature - 1

    def flip(tree):
      return jax.tree_util.tree_map(
        lambda x: flip_sequences(x, seq_lengths, n_batch, time_major), tree
      )

    if reverse:
      inputs = flip(inputs)
    if initial_carry is not None:
      carry = initial_carry
    else:
      # The cell sees one time step: the input without its time axis.
      step_shape = inputs.shape[:time_axis] + inputs.shape[time_axis + 1 :]
      carry = self.cell.initialize_carry(
        random.key(0) if init_key is None else init_key, step_shape
      )

    # With seq_lengths and return_carry every step's carry is kept, to pick
    # each sequence's carry after its last valid step.
    keep_carries = seq_lengths is not None and return_carry

    def step(cell, carry, x):
      carry, y = cell(carry, x)
      return carry, ((carry, y) if keep_carries else y)

    out_axes = (0, time_axis) if keep_carries else time_axis
    options = {k: getattr(self, k) for k in _SCAN_OPTIONS}
    scanned = _scan(step, in_axes=time_axis, out_axes=out_axes, **options)
    carry, stacked = scanned(self.cell, carry, inputs)
    if keep_carries:
      carries, outputs = stacked
      carry = rnn_math.select_last_carry(carries, seq_lengths)
    else:
      outputs = stacked
    if reverse and keep_order:
      outputs = flip(outputs)
    if return_carry:
      return carry, outputs
    return outputs


# RNN fields handed unchanged to the lifted scan.
_SCAN_OPTIONS = (
  'unroll',
  'variable_axes',
  'variable_broadcast',
  'variable_carry',
  'split_rngs',
)


def _concatenate(a: Array, b: Array) -> Array:
  """Concatenates two arrays along the last dimension."""
  return jnp.concatenate([a, b], axis=-1)


class Bidirectional(Module):
  """Processes the input in both directions and merges the results.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.Bidirectional(nn.RNN(nn.GRUCell(4)), nn.RNN(nn.GRUCell(4)))
    >>> x = jnp.ones((2, 3, 5))
    >>> variables = layer.init(jax.random.key(0), x)
    >>> layer.apply(variables, x).shape
    (2, 3, 8)

  Attributes:
    forward_rnn: the RNN run left to right.
    backward_rnn: the RNN run right to left (outputs re-reversed).
    merge_fn: merges the two outputs (default: concatenate on the last
      axis, forward first).
    time_major: whether time is the first axis.
    return_carry: return ``((forward_carry, backward_carry), outputs)``.
  """

  forward_rnn: Module
  backward_rnn: Module
  merge_fn: Callable[[Array, Array], Array] = _concatenate
  time_major: rnn_math.Flag = False
  return_carry: rnn_math.Flag = False

  def __call__(
    self,
    inputs: Array,
    *,
    initial_carry=None,
    init_key=None,
    seq_lengths=None,
    return_carry: rnn_math.MaybeFlag = None,
    time_major: rnn_math.MaybeFlag = None,
    reverse: rnn_math.MaybeFlag = None,
    keep_order: rnn_math.MaybeFlag = None,
  ):
    """Applies both RNNs and merges their outputs.

    Args:
      inputs: the input sequence.
      initial_carry: ``(forward_carry, backward_carry)`` or None.
      init_key: PRNG key split between the two carries' initializers.
      seq_lengths: ``(*batch,)`` valid lengths.
      return_carry: overrides the attribute.
      time_major: overrides the attribute.
      reverse: unused (each direction is fixed).
      keep_order: unused (the backward outputs are always re-reversed).

    Returns:
      The merged outputs, or ``(carries, outputs)`` with ``return_carry``.
    """
    time_major = self.time_major if time_major is None else time_major
    return_carry = self.return_carry if return_carry is None else return_carry
    # One key per direction, or none for either.
    keys = (None, None) if init_key is None else random.split(init_key)
    key_forward, key_backward = keys
    return rnn_math.bidirectional(
      self.forward_rnn,
      self.backward_rnn,
      self.merge_fn,
      inputs,
      initial_carry,
      return_carry,
      ({'init_key': key_forward}, {'init_key': key_backward}),
      seq_lengths=seq_lengths,
      time_major=time_major,
    )
