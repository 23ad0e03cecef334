"""Recurrent NNX layers: cells, ``RNN`` and ``Bidirectional``."""

from __future__ import annotations

import typing as tp

import jax
import jax.numpy as jnp

from flax import nnx
from flax.layers import recurrent as _math
from flax.layers.nnx import initializers
from flax.layers.nnx._utils import keep_args
from flax.layers.nnx._utils import key_from
from flax.layers.nnx._utils import optional_data
from flax.layers.nnx.linear import Linear
from flax.layers.nnx.linear import default_kernel_init

Array = jax.Array
Carry = tp.Any

default_recurrent_kernel_init = initializers.orthogonal()
default_bias_init = initializers.zeros_init()
default_carry_init = initializers.zeros_init()


def _carry_key(rngs):
  if rngs is None:
    return jax.random.key(0)
  return key_from(rngs, 'carry')


class RNNCellBase(nnx.Module):
  """Base class of the recurrent cells.

  A cell maps ``(carry, inputs)`` to ``(new_carry, outputs)`` for one time
  step and builds its first carry with :meth:`initialize_carry`.
  """

  def initialize_carry(self, input_shape: tuple[int, ...], rngs=None):
    """Returns the initial carry for inputs of shape ``input_shape``."""
    raise TypeError(f'{type(self).__name__} must define `initialize_carry`.')

  @property
  def num_feature_axes(self) -> int:
    """The number of feature axes of the inputs (1 for these cells)."""
    return 1


def _linear(cell, side, in_features, out_features, use_bias, rngs):
  """A ``Linear`` of the cell, on its inputs (``side='i'``, ``kernel_init``)
  or its hidden state (``'h'``, ``recurrent_kernel_init``); only a biased
  one gets the cell's ``bias_init``."""
  kernel_init = cell.kernel_init if side == 'i' else cell.recurrent_kernel_init
  bias_kwargs = {'bias_init': cell.bias_init} if use_bias else {}
  return Linear(
    in_features,
    out_features,
    use_bias=use_bias,
    kernel_init=kernel_init,
    dtype=cell.dtype,
    param_dtype=cell.param_dtype,
    rngs=rngs,
    **bias_kwargs,
  )


def _keep_rngs(rngs, keep_rngs):
  if keep_rngs and rngs is not None:
    return rngs
  return None


class LSTMCell(RNNCellBase):
  r"""An LSTM cell.

  .. math::
      i = \sigma(W_{ii} x + W_{hi} h + b_{hi}) \\
      f = \sigma(W_{if} x + W_{hf} h + b_{hf}) \\
      g = \tanh(W_{ig} x + W_{hg} h + b_{hg}) \\
      o = \sigma(W_{io} x + W_{ho} h + b_{ho}) \\
      c' = f * c + i * g \\
      h' = o * \tanh(c')

  Submodules (``Linear``): ``ii``, ``if_``, ``ig``, ``io`` (inputs, no bias)
  then ``hi``, ``hf``, ``hg``, ``ho`` (hidden state, with bias).

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> cell = nnx.LSTMCell(3, 4, rngs=nnx.Rngs(0))
  >>> carry = cell.initialize_carry((2, 3))
  >>> (c, h), y = cell(carry, jnp.ones((2, 3)))
  >>> y.shape
  (2, 4)

  Args:
    in_features: number of input features.
    hidden_features: number of hidden (output) features.
    gate_fn: gate activation (default sigmoid).
    activation_fn: activation of the cell and output (default tanh).
    kernel_init: initializer of the input kernels.
    recurrent_kernel_init: initializer of the hidden kernels.
    bias_init: initializer of the biases.
    dtype: dtype of the computation.
    param_dtype: dtype passed to the initializers.
    carry_init: initializer of the carry.
    keep_rngs: keep ``rngs`` for :meth:`initialize_carry`.
    rngs: rng key container.
  """

  def __init__(
    self,
    in_features: int,
    hidden_features: int,
    *,
    gate_fn: tp.Callable[..., Array] = jax.nn.sigmoid,
    activation_fn: tp.Callable[..., Array] = jax.numpy.tanh,
    kernel_init=default_kernel_init,
    recurrent_kernel_init=default_recurrent_kernel_init,
    bias_init=default_bias_init,
    dtype=None,
    param_dtype=jnp.float32,
    carry_init=default_carry_init,
    keep_rngs: bool = False,
    rngs: nnx.Rngs,
  ):
    keep_args(self, locals())
    hidden = hidden_features
    self.ii, self.if_, self.ig, self.io = (
      _linear(self, 'i', in_features, hidden, False, rngs) for _ in range(4)
    )
    self.hi, self.hf, self.hg, self.ho = (
      _linear(self, 'h', hidden, hidden, True, rngs) for _ in range(4)
    )
    self.rngs = optional_data(_keep_rngs(rngs, keep_rngs))

  def __call__(self, carry, inputs):
    """One step: returns ``((new_c, new_h), new_h)``."""
    c, h = carry
    i = self.gate_fn(self.ii(inputs) + self.hi(h))
    f = self.gate_fn(self.if_(inputs) + self.hf(h))
    g = self.activation_fn(self.ig(inputs) + self.hg(h))
    o = self.gate_fn(self.io(inputs) + self.ho(h))
    new_c = f * c + i * g
    new_h = o * self.activation_fn(new_c)
    return (new_c, new_h), new_h

  def initialize_carry(self, input_shape: tuple[int, ...], rngs=None):
    """Returns ``(c, h)``, each of shape ``(*batch, hidden_features)``.

    Args:
      input_shape: the shape of one step of inputs, ``(*batch, features)``.
      rngs: rngs for ``carry_init`` (default: the kept rngs, if any).
    """
    if rngs is None:
      rngs = self.rngs
    shape = tuple(input_shape[:-1]) + (self.hidden_features,)
    c = self.carry_init(_carry_key(rngs), shape, self.param_dtype)
    h = self.carry_init(_carry_key(rngs), shape, self.param_dtype)
    return (c, h)


class OptimizedLSTMCell(RNNCellBase):
  """An LSTM cell computing its four gates with two matrix products.

  Submodules: ``dense_i`` (kernel ``(in, 4 * hidden)``, no bias) and
  ``dense_h`` (kernel ``(hidden, 4 * hidden)``, bias ``(4 * hidden,)``);
  the gates are, in order, input, forget, cell and output. Faster than
  :class:`LSTMCell` for small hidden sizes.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> cell = nnx.OptimizedLSTMCell(3, 4, rngs=nnx.Rngs(0))
  >>> cell.dense_h.kernel.shape
  (4, 16)

  Args: as :class:`LSTMCell`.
  """

  def __init__(
    self,
    in_features: int,
    hidden_features: int,
    *,
    gate_fn: tp.Callable[..., Array] = jax.nn.sigmoid,
    activation_fn: tp.Callable[..., Array] = jax.numpy.tanh,
    kernel_init=default_kernel_init,
    recurrent_kernel_init=default_recurrent_kernel_init,
    bias_init=default_bias_init,
    dtype=None,
    param_dtype=jnp.float32,
    carry_init=default_carry_init,
    keep_rngs: bool = False,
    rngs: nnx.Rngs,
  ):
    keep_args(self, locals())
    hidden = hidden_features
    self.dense_i = _linear(self, 'i', in_features, 4 * hidden, False, rngs)
    self.dense_h = _linear(self, 'h', hidden, 4 * hidden, True, rngs)
    self.rngs = optional_data(_keep_rngs(rngs, keep_rngs))

  def __call__(self, carry, inputs):
    """One step: returns ``((new_c, new_h), new_h)``."""
    c, h = carry
    y = self.dense_i(inputs) + self.dense_h(h)
    i, f, g, o = jnp.split(y, 4, axis=-1)
    i = self.gate_fn(i)
    f = self.gate_fn(f)
    g = self.activation_fn(g)
    o = self.gate_fn(o)
    new_c = f * c + i * g
    new_h = o * self.activation_fn(new_c)
    return (new_c, new_h), new_h

  initialize_carry = LSTMCell.initialize_carry


class SimpleCell(RNNCellBase):
  """An Elman cell: ``h' = activation(W_i x + b + W_h h)``.

  Submodules: ``dense_h`` (kernel ``(hidden, hidden)``, no bias) and
  ``dense_i`` (kernel ``(in, hidden)``, bias ``(hidden,)``).

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> cell = nnx.SimpleCell(3, 4, rngs=nnx.Rngs(0))
  >>> h, y = cell(cell.initialize_carry((2, 3)), jnp.ones((2, 3)))
  >>> y.shape
  (2, 4)

  Args:
    in_features: number of input features.
    hidden_features: number of hidden features.
    dtype: dtype of the computation.
    param_dtype: dtype passed to the initializers.
    carry_init: initializer of the carry.
    residual: add the previous carry before the activation.
    activation_fn: activation (default tanh).
    kernel_init: initializer of the input kernel.
    recurrent_kernel_init: initializer of the hidden kernel.
    bias_init: initializer of the bias.
    keep_rngs: keep ``rngs`` for :meth:`initialize_carry`.
    rngs: rng key container.
  """

  def __init__(
    self,
    in_features: int,
    hidden_features: int,
    *,
    dtype=None,
    param_dtype=jnp.float32,
    carry_init=default_carry_init,
    residual: bool = False,
    activation_fn: tp.Callable[..., Array] = jax.numpy.tanh,
    kernel_init=default_kernel_init,
    recurrent_kernel_init=default_recurrent_kernel_init,
    bias_init=default_bias_init,
    keep_rngs: bool = False,
    rngs: nnx.Rngs,
  ):
    keep_args(self, locals())
    hidden = hidden_features
    self.dense_h = _linear(self, 'h', hidden, hidden, False, rngs)
    self.dense_i = _linear(self, 'i', in_features, hidden, True, rngs)
    self.rngs = optional_data(_keep_rngs(rngs, keep_rngs))

  def __call__(self, carry, inputs):
    """One step: returns ``(new_carry, new_carry)``."""
    new_carry = self.dense_i(inputs) + self.dense_h(carry)
    if self.residual:
      new_carry = new_carry + carry
    new_carry = self.activation_fn(new_carry)
    return new_carry, new_carry

  def initialize_carry(self, input_shape: tuple[int, ...], rngs=None):
    """Returns a carry of shape ``(*batch, hidden_features)``."""
    if rngs is None:
      rngs = self.rngs
    shape = tuple(input_shape[:-1]) + (self.hidden_features,)
    return self.carry_init(_carry_key(rngs), shape, self.param_dtype)


class GRUCell(RNNCellBase):
  r"""A GRU cell.

  .. math::
      r = \sigma(W_{ir} x + b_{ir} + W_{hr} h) \\
      z = \sigma(W_{iz} x + b_{iz} + W_{hz} h) \\
      n = \tanh(W_{in} x + b_{in} + r * (W_{hn} h)) \\
      h' = (1 - z) * n + z * h

  Submodules: ``dense_i`` (kernel ``(in, 3 * hidden)``, bias) and
  ``dense_h`` (kernel ``(hidden, 3 * hidden)``, no bias); gates in the order
  r, z, n.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> cell = nnx.GRUCell(3, 4, rngs=nnx.Rngs(0))
  >>> h, y = cell(cell.initialize_carry((2, 3)), jnp.ones((2, 3)))
  >>> y.shape
  (2, 4)

  Args: as :class:`LSTMCell`.
  """

  def __init__(
    self,
    in_features: int,
    hidden_features: int,
    *,
    gate_fn: tp.Callable[..., Array] = jax.nn.sigmoid,
    activation_fn: tp.Callable[..., Array] = jax.numpy.tanh,
    kernel_init=default_kernel_init,
    recurrent_kernel_init=default_recurrent_kernel_init,
    bias_init=default_bias_init,
    dtype=None,
    param_dtype=jnp.float32,
    carry_init=default_carry_init,
    keep_rngs: bool = False,
    rngs: nnx.Rngs,
  ):
    keep_args(self, locals())
    hidden = hidden_features
    self.dense_i = _linear(self, 'i', in_features, 3 * hidden, True, rngs)
    self.dense_h = _linear(self, 'h', hidden, 3 * hidden, False, rngs)
    self.rngs = optional_data(_keep_rngs(rngs, keep_rngs))

  def __call__(self, carry, inputs):
    """One step: returns ``(new_h, new_h)``."""
    h = carry
    xr, xz, xn = jnp.split(self.dense_i(inputs), 3, axis=-1)
    hr, hz, hn = jnp.split(self.dense_h(h), 3, axis=-1)
    r = self.gate_fn(xr + hr)
    z = self.gate_fn(xz + hz)
    n = self.activation_fn(xn + r * hn)
    new_h = (1.0 - z) * n + z * h
    return new_h, new_h

  initialize_carry = SimpleCell.initialize_carry


flip_sequences = _math.flip_sequences


def _concatenate(a: Array, b: Array) -> Array:
  return jnp.concatenate([a, b], axis=-1)


def _select_last(carries, seq_lengths: Array, num_batch_dims: int):
  """Picks, per batch element, the carry at step ``seq_lengths - 1``."""
  last = jnp.asarray(seq_lengths) - 1

  def select(x):
    # x: (time, *batch, *rest)
    idx = jnp.reshape(last, (1,) + last.shape + (1,) * (x.ndim - 1 - last.ndim))
    return jnp.take_along_axis(x, idx, axis=0)[0]

  return jax.tree.map(select, carries)


class RNN(nnx.Module):
  """Runs a recurrent cell over the time axis of its inputs.

  The cell is available as the ``cell`` attribute (its parameters appear
  under ``cell/...``) and its parameters are shared by every step.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.RNN(nnx.LSTMCell(3, 4, rngs=nnx.Rngs(0)))
  >>> layer(jnp.ones((2, 5, 3))).shape
  (2, 5, 4)

  Args:
    cell: a cell, e.g. :class:`LSTMCell`.
    time_major: inputs are ``(time, *batch, *features)`` when True, else
      ``(*batch, time, *features)``.
    return_carry: also return the final carry, as ``(carry, outputs)``.
    reverse: process the sequence from its end (padding stays at the end).
    keep_order: with ``reverse``, give outputs in the original order.
    unroll: how many steps ``lax.scan`` unrolls.
    rngs: rngs for the initial carry.
  """

  def __init__(
    self,
    cell: RNNCellBase,
    *,
    time_major: bool = False,
    return_carry: bool = False,
    reverse: bool = False,
    keep_order: bool = False,
    unroll: int = 1,
    rngs=None,
  ):
    self.cell = cell
    self.time_major = time_major
    self.return_carry = return_carry
    self.reverse = reverse
    self.keep_order = keep_order
    self.unroll = unroll
    self.rngs = optional_data(rngs)

  def __call__(
    self,
    inputs: Array,
    *,
    initial_carry: Carry | None = None,
    seq_lengths: Array | None = None,
    return_carry: bool | None = None,
    time_major: bool | None = None,
    reverse: bool | None = None,
    keep_order: bool | None = None,
    rngs=None,
  ):
    """Runs the cell over ``inputs``.

    Args:
      inputs: ``(*batch, time, *features)`` (time first if ``time_major``).
      initial_carry: the first carry (default ``cell.initialize_carry``).
      seq_lengths: valid length of each sequence, shape ``batch``; the
        returned carry is the one at the last valid step (outputs past it
        are not zeroed).
      return_carry: overrides the attribute.
      time_major: overrides the attribute.
      reverse: overrides the attribute.
      keep_order: overrides the attribute.
      rngs: rngs for the initial carry.

    Returns:
      The outputs ``(*batch, time, *out_features)``, or ``(carry, outputs)``
      with ``return_carry``.
    """
    if return_carry is None:
      return_carry = self.return_carry
    if time_major is None:
      time_major = self.time_major
    if reverse is None:
      reverse = self.reverse
    if keep_order is None:
      keep_order = self.keep_order

    num_feature_axes = self.cell.num_feature_axes
    time_axis = 0 if time_major else inputs.ndim - (num_feature_axes + 1)
    if time_axis < 0:
      raise ValueError(
        f'Invalid inputs shape {inputs.shape}: the inputs need a time axis '
        f'and {num_feature_axes} feature axes.'
      )
    if time_major:
      batch_dims = inputs.shape[1 : inputs.ndim - num_feature_axes]
    else:
      batch_dims = inputs.shape[:time_axis]
    num_batch_dims = len(batch_dims)

    if reverse:
      inputs = flip_sequences(inputs, seq_lengths, num_batch_dims, time_major)

    if initial_carry is None:
      if rngs is None:
        rngs = self.rngs
      step_shape = inputs.shape[:time_axis] + inputs.shape[time_axis + 1 :]
      initial_carry = self.cell.initialize_carry(step_shape, rngs)

    cell = self.cell
    slice_carry = seq_lengths is not None and return_carry

    def step(carry, x):
      carry, y = cell(carry, x)
      if slice_carry:
        return carry, (carry, y)
      return carry, y

    xs = jnp.moveaxis(inputs, time_axis, 0) if time_axis else inputs
    carry, ys = jax.lax.scan(step, initial_carry, xs, unroll=self.unroll)
    if slice_carry:
      carries, ys = ys
      carry = _select_last(carries, seq_lengths, num_batch_dims)
    outputs = jax.tree.map(lambda y: jnp.moveaxis(y, 0, time_axis), ys)

    if reverse and keep_order:
      outputs = jax.tree.map(
        lambda y: flip_sequences(y, seq_lengths, num_batch_dims, time_major),
        outputs,
      )
    if return_carry:
      return carry, outputs
    return outputs


class Bidirectional(nnx.Module):
  """Runs a forward and a backward RNN and merges their outputs.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> rngs = nnx.Rngs(0)
  >>> layer = nnx.Bidirectional(
  ...   nnx.RNN(nnx.GRUCell(3, 4, rngs=rngs)),
  ...   nnx.RNN(nnx.GRUCell(3, 4, rngs=rngs)),
  ... )
  >>> layer(jnp.ones((2, 5, 3))).shape
  (2, 5, 8)

  Args:
    forward_rnn: the RNN run left to right.
    backward_rnn: the RNN run right to left (outputs kept in order).
    merge_fn: merges the two outputs (default: concatenate on the last
      axis, forward first).
    time_major: whether time is the first axis.
    return_carry: also return ``(forward_carry, backward_carry)``.
  """

  def __init__(
    self,
    forward_rnn: RNN,
    backward_rnn: RNN,
    *,
    merge_fn: tp.Callable[[Array, Array], Array] = _concatenate,
    time_major: bool = False,
    return_carry: bool = False,
  ):
    self.forward_rnn = forward_rnn
    self.backward_rnn = backward_rnn
    self.merge_fn = merge_fn
    self.time_major = time_major
    self.return_carry = return_carry

  def __call__(
    self,
    inputs: Array,
    *,
    initial_carry: tuple[Carry, Carry] | None = None,
    rngs=None,
    seq_lengths: Array | None = None,
    return_carry: bool | None = None,
    time_major: bool | None = None,
    reverse: bool | None = None,
    keep_order: bool | None = None,
  ):
    """Runs both RNNs; see :meth:`RNN.__call__` for the arguments.

    Returns:
      The merged outputs, or ``((forward_carry, backward_carry), outputs)``
      with ``return_carry``.
    """
    if return_carry is None:
      return_carry = self.return_carry
    if time_major is None:
      time_major = self.time_major
    return _math.bidirectional(
      self.forward_rnn,
      self.backward_rnn,
      self.merge_fn,
      inputs,
      initial_carry,
      return_carry,
      ({'rngs': rngs}, {'rngs': rngs}),
      seq_lengths=seq_lengths,
      time_major=time_major,
    )
