"""Sequence helpers of the recurrent layers.

>>> import jax.numpy as jnp
>>> from flax.layers.recurrent import flip_sequences
>>> x = jnp.array([[1, 2, 3, 0]])
>>> flip_sequences(x, jnp.array([3]), num_batch_dims=1, time_major=False)
Array([[3, 2, 1, 0]], dtype=int32)
"""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from flax.layers import linear as _linear

Activation = Callable[..., Any]
"""Type of a cell's ``gate_fn`` / ``activation_fn``."""
Flag = bool
"""Type of an RNN's on/off options (``time_major``, ``reverse``, ...)."""
MaybeFlag = bool | None
"""Type of a call-time option override (None: keep the attribute)."""


def flip_sequences(inputs, seq_lengths, num_batch_dims: int, time_major: bool):
  """Reverses each sequence in time, keeping padding at the end.

  Args:
    inputs: ``(*batch, time, *features)`` or ``(time, *batch, *features)``.
    seq_lengths: ``(*batch,)`` valid lengths, or None (whole sequences).
    num_batch_dims: number of batch axes.
    time_major: whether time is the first axis.

  Returns:
    The flipped inputs; element ``t < length`` comes from
    ``length - 1 - t``, the padding positions stay in place.
  """
  time_axis = 0 if time_major else num_batch_dims
  max_steps = inputs.shape[time_axis]
  if seq_lengths is None:
    return jnp.flip(inputs, axis=time_axis)
  seq_lengths = jnp.expand_dims(seq_lengths, axis=time_axis)
  idxs = jnp.arange(max_steps - 1, -1, -1)
  if time_major:
    idxs = jnp.reshape(idxs, [max_steps] + [1] * num_batch_dims)
  else:
    idxs = jnp.reshape(idxs, [1] * num_batch_dims + [max_steps])
  idxs = (idxs + seq_lengths) % max_steps
  idxs = idxs.reshape(idxs.shape + (1,) * (inputs.ndim - idxs.ndim))
  return jnp.take_along_axis(inputs, idxs, axis=time_axis)


def select_last_carry(carries, seq_lengths):
  """Picks, per sequence, the carry after its last valid step.

  Args:
    carries: pytree of ``(time, batch, ...)`` carry histories.
    seq_lengths: ``(batch,)``.

  Returns:
    The pytree of ``(batch, ...)`` carries.
  """
  last = seq_lengths - 1

  def pick(x):
    return x[last, jnp.arange(x.shape[1])]

  return jax.tree_util.tree_map(pick, carries)


def concat_dense(inputs, kernels, biases=None, *, precision=None):
  """One matmul for several dense layers sharing an input.

  Args:
    inputs: ``(..., in)``.
    kernels: list of ``(in, f_i)`` kernels.
    biases: list of ``(f_i,)`` biases, or None.
    precision: ``lax.Precision``.

  Returns:
    The list of outputs ``(..., f_i)``.
  """
  kernel = jnp.concatenate(kernels, axis=-1)
  y = jnp.dot(inputs, kernel, precision=precision)
  if biases is not None:
    y = _linear.add_trailing(y, jnp.concatenate(biases, axis=-1))
  splits = np.cumsum([k.shape[-1] for k in kernels[:-1]])
  return jnp.split(y, splits, axis=-1)


LSTM_GATES = 'ifgo'
"""An LSTM's pre-activations in parameter order: input, forget, cell, out."""


def lstm_update(c, pre, gate_fn, activation_fn):
  """One LSTM memory update.

  Args:
    c: the memory before the step.
    pre: the pre-activations, a mapping keyed by the letters of
      :data:`LSTM_GATES`.
    gate_fn: squashes the ``i``, ``f`` and ``o`` gates.
    activation_fn: squashes the candidate ``g`` and the new memory.

  Returns:
    ``(new_c, new_h)``.
  """
  opened = {k: gate_fn(pre[k]) for k in 'ifo'}
  new_c = opened['f'] * c + opened['i'] * activation_fn(pre['g'])
  return new_c, opened['o'] * activation_fn(new_c)


def blend(keep, candidate, previous):
  """``(1 - keep) * candidate + keep * previous``: GRU and MGU updates."""
  return (1.0 - keep) * candidate + keep * previous


def conv_lstm_gates(gates, c):
  """ConvLSTM update from the summed ``i, g, f, o`` gate pre-activations."""
  i, g, f, o = jnp.split(gates, 4, axis=-1)
  f = jax.nn.sigmoid(f + 1)
  new_c = f * c + jax.nn.sigmoid(i) * jnp.tanh(g)
  new_h = jax.nn.sigmoid(o) * jnp.tanh(new_c)
  return new_c, new_h


def bidirectional(
  forward_rnn,
  backward_rnn,
  merge_fn,
  inputs,
  initial_carry,
  return_carry: bool,
  rng_kwargs,
  **kwargs,
):
  """Runs two RNNs over ``inputs``, the second one reversed, and merges.

  Args:
    forward_rnn: the RNN run left to right.
    backward_rnn: the RNN run right to left (its outputs re-reversed).
    merge_fn: merges the two outputs, leaf by leaf.
    inputs: the input sequence.
    initial_carry: ``(forward_carry, backward_carry)`` or None.
    return_carry: return ``((forward_carry, backward_carry), outputs)``.
    rng_kwargs: the carry-initializer keyword arguments of each RNN,
      ``(forward_kwargs, backward_kwargs)``.
    **kwargs: passed to both RNNs (``seq_lengths``, ``time_major``).

  Returns:
    The merged outputs, or ``(carries, outputs)`` with ``return_carry``.
  """
  if initial_carry is not None:
    carry_forward, carry_backward = initial_carry
  else:
    carry_forward = carry_backward = None
  forward_kwargs, backward_kwargs = rng_kwargs
  carry_forward, outputs_forward = forward_rnn(
    inputs,
    initial_carry=carry_forward,
    return_carry=True,
    reverse=False,
    **forward_kwargs,
    **kwargs,
  )
  carry_backward, outputs_backward = backward_rnn(
    inputs,
    initial_carry=carry_backward,
    return_carry=True,
    reverse=True,
    keep_order=True,
    **backward_kwargs,
    **kwargs,
  )
  carry = (carry_forward, carry_backward)
  outputs = jax.tree_util.tree_map(merge_fn, outputs_forward, outputs_backward)
  if return_carry:
    return carry, outputs
  return outputs
