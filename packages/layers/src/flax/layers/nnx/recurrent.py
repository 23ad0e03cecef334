"""Recurrent NNX layers: cells, ``RNN`` and ``Bidirectional``."""

from __future__ import annotations

import typing as tp
import warnings
from types import MappingProxyType

import jax
import jax.numpy as jnp

from flax import nnx
from flax.nnx import Module as Module
from flax.typing import PromoteDtypeFn as PromoteDtypeFn
from flax.layers import recurrent as _math
from flax.layers.nnx import dtypes
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

_EMPTY = MappingProxyType({})


def modified_orthogonal(
  key: Array, shape: tp.Sequence[int], dtype=jnp.float32
) -> Array:
  """The orthogonal initializer, computed in float32 and cast to ``dtype``
  (so it also serves half-precision parameters).

  >>> import jax, jax.numpy as jnp
  >>> w = modified_orthogonal(jax.random.key(0), (3, 3), jnp.bfloat16)
  >>> w.dtype
  dtype(bfloat16)
  """
  return default_recurrent_kernel_init(key, shape, jnp.float32).astype(dtype)


def _init_cell(cell, args):
  """Keeps a cell's settings and warns about the deprecated arguments.

  Args:
    cell: the cell being built.
    args: its constructor's ``locals()``.
  """
  if args['keep_rngs']:
    warnings.warn(
      'keep_rngs argument is deprecated. Please use rngs argument in '
      '__call__ instead',
      UserWarning,
      stacklevel=3,
    )
  if args['carry_init'] is not None:
    warnings.warn(
      'carry_init is provided in __init__. Please, use carry_init argument '
      'in `initialize_carry` method instead to initialize the carry. '
      'Otherwise, two instances with same configuration but different '
      'carry_init functions will have different graphdefs.',
      UserWarning,
      stacklevel=3,
    )
  keep_args(cell, args)
  # A kept stream is a fork of the ``carry`` stream (or the default one),
  # made before the parameters draw.
  rngs = args['rngs'] if args['keep_rngs'] else None
  if isinstance(rngs, nnx.Rngs):
    rngs = rngs['carry']
  cell.rngs = optional_data(None if rngs is None else rngs.fork())


def _initial_carry(cell, input_shape, rngs, carry_init, count):
  """``count`` carry arrays of shape ``(*batch, hidden_features)``.

  Keys are drawn one per array from the ``carry`` stream of ``rngs`` (or
  of the rngs the cell kept).
  """
  if rngs is None:
    rngs = cell.rngs
  if rngs is None:
    raise ValueError('RNGs must be provided to initialize the cell carry.')
  init = carry_init or cell.carry_init or default_carry_init
  shape = (*input_shape[:-1], cell.hidden_features)
  arrays = tuple(
    init(key_from(rngs, 'carry'), shape, cell.param_dtype) for _ in range(count)
  )
  return arrays if count > 1 else arrays[0]


class RNNCellBase(nnx.Module):
  """Base class of the recurrent cells.

  A cell maps ``(carry, inputs)`` to ``(new_carry, outputs)`` for one time
  step and builds its first carry with :meth:`initialize_carry`.
  """

  def initialize_carry(
    self, input_shape: tuple[int, ...], rngs=None, carry_init=None
  ):
    """Returns the initial carry for inputs of shape ``input_shape``."""
    raise TypeError(f'{type(self).__name__} must define `initialize_carry`.')

  @property
  def num_feature_axes(self) -> int:
    """The number of feature axes of the inputs (1 for these cells)."""
    return 1


class RNNBase(tp.Protocol):
  """What ``Bidirectional`` expects of its two sequence layers."""

  def __call__(
    self,
    inputs: Array,
    *,
    initial_carry: Carry | None = None,
    rngs=None,
    seq_lengths: Array | None = None,
    return_carry: bool | None = None,
    time_major: bool | None = None,
    reverse: bool | None = None,
    keep_order: bool | None = None,
  ): ...


def _linear(cell, args, side, in_features, out_features, use_bias):
  """A ``Linear`` of the cell, on its inputs (``side='i'``: ``kernel_init``,
  ``kernel_metadata``) or its hidden state (``'h'``:
  ``recurrent_kernel_init``, ``recurrent_kernel_metadata``); only a biased
  one gets the cell's ``bias_init`` and ``bias_metadata``. ``args`` is the
  cell constructor's ``locals()``."""
  prefix = '' if side == 'i' else 'recurrent_'
  kwargs = {}
  if use_bias:
    kwargs = {
      'bias_init': args['bias_init'],
      'bias_metadata': args['bias_metadata'],
    }
  return Linear(
    in_features,
    out_features,
    use_bias=use_bias,
    kernel_init=args[prefix + 'kernel_init'],
    kernel_metadata=args[prefix + 'kernel_metadata'],
    dtype=args['dtype'],
    param_dtype=args['param_dtype'],
    promote_dtype=args['promote_dtype'],
    rngs=args['rngs'],
    **kwargs,
  )


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
  >>> carry = cell.initialize_carry((2, 3), rngs=nnx.Rngs(1))
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
    recurrent_kernel_init=modified_orthogonal,
    bias_init=default_bias_init,
    dtype=None,
    param_dtype=jnp.float32,
    carry_init=None,
    promote_dtype=dtypes.promote_dtype,
    keep_rngs: bool = False,
    rngs: nnx.Rngs,
    kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    recurrent_kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    args = locals()
    _init_cell(self, args)
    hidden = hidden_features
    self.ii, self.if_, self.ig, self.io = (
      _linear(self, args, 'i', in_features, hidden, False) for _ in range(4)
    )
    self.hi, self.hf, self.hg, self.ho = (
      _linear(self, args, 'h', hidden, hidden, True) for _ in range(4)
    )
    self.carry_init = carry_init

  def __call__(self, carry, inputs):
    """One step: returns ``((new_c, new_h), new_h)``."""
    c, h = carry
    pairs = {
      'i': (self.ii, self.hi),
      'f': (self.if_, self.hf),
      'g': (self.ig, self.hg),
      'o': (self.io, self.ho),
    }
    pre = {
      k: from_x(inputs) + from_h(h) for k, (from_x, from_h) in pairs.items()
    }
    c, h = _math.lstm_update(c, pre, self.gate_fn, self.activation_fn)
    return (c, h), h

  def initialize_carry(
    self, input_shape: tuple[int, ...], rngs=None, carry_init=None
  ):
    """Returns ``(c, h)``, each of shape ``(*batch, hidden_features)``.

    Args:
      input_shape: the shape of one step of inputs, ``(*batch, features)``.
      rngs: rngs whose ``carry`` stream feeds ``carry_init`` (default: the
        kept rngs, if any).
      carry_init: initializer of the carry (default: the one given to the
        constructor, else zeros).
    """
    return _initial_carry(self, input_shape, rngs, carry_init, 2)


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
    carry_init=None,
    promote_dtype=dtypes.promote_dtype,
    keep_rngs: bool = False,
    rngs: nnx.Rngs,
    kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    recurrent_kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    args = locals()
    _init_cell(self, args)
    hidden = hidden_features
    self.dense_i = _linear(self, args, 'i', in_features, 4 * hidden, False)
    self.dense_h = _linear(self, args, 'h', hidden, 4 * hidden, True)
    self.carry_init = carry_init

  def __call__(self, carry, inputs):
    """One step: returns ``((new_c, new_h), new_h)``."""
    c, h = carry
    fused = self.dense_i(inputs) + self.dense_h(h)
    pre = dict(zip(_math.LSTM_GATES, jnp.split(fused, 4, axis=-1)))
    c, h = _math.lstm_update(c, pre, self.gate_fn, self.activation_fn)
    return (c, h), h

  initialize_carry = LSTMCell.initialize_carry


class SimpleCell(RNNCellBase):
  """An Elman cell: ``h' = activation(W_i x + b + W_h h)``.

  Submodules: ``dense_h`` (kernel ``(hidden, hidden)``, no bias) and
  ``dense_i`` (kernel ``(in, hidden)``, bias ``(hidden,)``).

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> cell = nnx.SimpleCell(3, 4, rngs=nnx.Rngs(0))
  >>> carry = cell.initialize_carry((2, 3), rngs=nnx.Rngs(1))
  >>> h, y = cell(carry, jnp.ones((2, 3)))
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
    dtype=jnp.float32,
    param_dtype=jnp.float32,
    carry_init=None,
    residual: bool = False,
    activation_fn: tp.Callable[..., Array] = jax.numpy.tanh,
    kernel_init=default_kernel_init,
    recurrent_kernel_init=default_recurrent_kernel_init,
    bias_init=default_bias_init,
    promote_dtype=dtypes.promote_dtype,
    keep_rngs: bool = False,
    rngs: nnx.Rngs,
    kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    recurrent_kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    args = locals()
    _init_cell(self, args)
    hidden = hidden_features
    self.dense_h = _linear(self, args, 'h', hidden, hidden, False)
    self.dense_i = _linear(self, args, 'i', in_features, hidden, True)
    self.carry_init = carry_init

  def __call__(self, carry, inputs):
    """One step: returns ``(new_carry, new_carry)``."""
    new_carry = self.dense_i(inputs) + self.dense_h(carry)
    if self.residual:
      new_carry = new_carry + carry
    new_carry = self.activation_fn(new_carry)
    return new_carry, new_carry

  def initialize_carry(
    self, input_shape: tuple[int, ...], rngs=None, carry_init=None
  ):
    """Returns a carry of shape ``(*batch, hidden_features)``.

    Args: as :meth:`LSTMCell.initialize_carry`.
    """
    return _initial_carry(self, input_shape, rngs, carry_init, 1)


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
  >>> carry = cell.initialize_carry((2, 3), rngs=nnx.Rngs(1))
  >>> h, y = cell(carry, jnp.ones((2, 3)))
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
    carry_init=None,
    promote_dtype=dtypes.promote_dtype,
    keep_rngs: bool = False,
    rngs: nnx.Rngs,
    kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    recurrent_kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    args = locals()
    _init_cell(self, args)
    hidden = hidden_features
    self.dense_i = _linear(self, args, 'i', in_features, 3 * hidden, True)
    self.dense_h = _linear(self, args, 'h', hidden, 3 * hidden, False)
    self.carry_init = carry_init

  def __call__(self, carry, inputs):
    """One step: returns ``(new_h, new_h)``."""
    h = carry
    (xr, xz, xn), (hr, hz, hn) = (
      jnp.split(y, 3, axis=-1) for y in (self.dense_i(inputs), self.dense_h(h))
    )
    r, z = self.gate_fn(xr + hr), self.gate_fn(xz + hz)
    h = _math.blend(z, self.activation_fn(xn + r * hn), h)
    return h, h

  initialize_carry = SimpleCell.initialize_carry


flip_sequences = _math.flip_sequences


def _concatenate(a: Array, b: Array) -> Array:
  """Concatenates two arrays along the last dimension."""
  return jnp.concatenate([a, b], axis=-1)


def _select_last(carries, seq_lengths: Array, num_batch_dims: int):
  """Picks, per batch element, the carry at step ``seq_lengths - 1``."""
  last = jnp.asarray(seq_lengths) - 1

  def select(x):
    # x: (time, *batch, *rest)
    idx = jnp.reshape(last, (1,) + last.shape + (1,) * (x.ndim - 1 - last.ndim))
    return jnp.take_along_axis(x, idx, axis=0)[0]

  return jax.tree.map(select, carries)


def _select_last_carry(sequence, seq_lengths: Array):
  """The entry of a time-major ``sequence`` (a pytree of
  ``(time, *batch, ...)`` arrays) at step ``seq_lengths - 1`` for each batch
  element."""
  return _select_last(sequence, seq_lengths, jnp.ndim(seq_lengths))


def _carry_stream(rngs):
  """The stream an RNN draws its initial carries from: ``True`` gives a
  ``carry`` stream seeded with 0, ``False``/None none, and given rngs a
  fork of their ``carry`` stream (so the caller's stream is not
  advanced)."""
  if rngs is True:
    return nnx.Rngs(carry=0)['carry']
  if rngs is False or rngs is None:
    return None
  if isinstance(rngs, nnx.Rngs):
    rngs = rngs['carry']
  return rngs.fork()


def _time_axis(shape, time_major: bool, num_feature_axes: int):
  """``(time_axis, number of batch axes)`` of inputs of ``shape``, laid out
  as ``(time, *batch, *features)`` or ``(*batch, time, *features)``."""
  num_batch_dims = len(shape) - num_feature_axes - 1
  if num_batch_dims < 0:
    raise ValueError(
      f'Invalid inputs shape {shape}: the inputs need a time axis '
      f'and {num_feature_axes} feature axes.'
    )
  return (0 if time_major else num_batch_dims), num_batch_dims


def _step(cell, carry, x):
  return cell(carry, x)


def _step_keeping_carries(cell, carry, x):
  carry, y = cell(carry, x)
  return carry, (carry, y)


def _scan_over_time(state_axes, broadcast_rngs, keep_carries, unroll):
  """``f(cell, carry, xs) -> (carry, ys)``: the cell run over the leading
  axis of ``xs`` with ``nnx.scan``, its state passed between steps as
  ``state_axes`` says. Rng streams selected by ``broadcast_rngs`` are
  forked once and given unchanged to every step.
  """
  if broadcast_rngs is not None:
    state_axes = {broadcast_rngs: None, **dict(state_axes.items())}
  if not isinstance(state_axes, nnx.StateAxes):
    state_axes = nnx.StateAxes(state_axes)
  body = _step_keeping_carries if keep_carries else _step
  scan = nnx.scan(
    body,
    in_axes=(state_axes, nnx.Carry, 0),
    out_axes=(nnx.Carry, 0),
    unroll=unroll,
  )
  if broadcast_rngs is not None:
    scan = nnx.split_rngs(splits=1, only=broadcast_rngs, squeeze=True)(scan)
  return scan


# The RNN options a call may override (None: keep the attribute).
_RNN_DEFAULTS = ('return_carry', 'time_major', 'reverse', 'keep_order')
_Override = bool | None
_MaybeCarry = Carry | None


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
    state_axes: how the cell's state is passed between steps, a mapping
      from filters to ``nnx.Carry`` (threaded from step to step), ``None``
      (the same for every step) or an int axis (as in ``nnx.scan``); the
      default carries all of it (``nnx.StateAxes({...: nnx.Carry})``).
    broadcast_rngs: a filter of the cell's rng streams that give the same
      keys at every step (e.g. ``'dropout'`` for one dropout mask for the
      whole sequence): each such stream is forked once per call, which
      advances it by one.
    rngs: the stream the initial carry is drawn from: ``True`` (default)
      for a ``carry`` stream seeded with 0, an ``Rngs`` (its ``carry``
      stream) or an ``RngStream``, or ``False`` for none.
  """

  def __init__(
    self,
    cell: RNNCellBase,
    *,
    time_major=False,
    return_carry=False,
    reverse=False,
    keep_order=False,
    unroll: int = 1,
    state_axes: tp.Mapping[str, tp.Any] | None = None,
    broadcast_rngs: tp.Any = None,
    rngs: nnx.Rngs | nnx.RngStream | bool = True,
  ):
    args = locals()
    for name in ('cell', 'time_major', 'return_carry', 'reverse', 'keep_order'):
      setattr(self, name, args[name])
    self.unroll = unroll
    self.rngs = optional_data(_carry_stream(rngs))
    # Unless told otherwise, every piece of the cell's state is a carry.
    self.state_axes = (
      nnx.StateAxes({...: nnx.Carry}) if state_axes is None else state_axes
    )
    self.broadcast_rngs = broadcast_rngs

  def __call__(
    self,
    inputs: Array,
    *,
    initial_carry: _MaybeCarry = None,
    seq_lengths: Array | None = None,
    return_carry: _Override = None,
    time_major: _Override = None,
    reverse: _Override = None,
    keep_order: _Override = None,
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
    given = locals()
    return_carry, time_major, reverse, keep_order = (
      getattr(self, k) if given[k] is None else given[k] for k in _RNN_DEFAULTS
    )
    time_axis, num_batch_dims = _time_axis(
      inputs.shape, time_major, self.cell.num_feature_axes
    )

    if reverse:
      inputs = flip_sequences(inputs, seq_lengths, num_batch_dims, time_major)

    if initial_carry is None:
      rngs = self.rngs if rngs is None else _carry_stream(rngs)
      step_shape = inputs.shape[:time_axis] + inputs.shape[time_axis + 1 :]
      initial_carry = self.cell.initialize_carry(step_shape, rngs)

    slice_carry = seq_lengths is not None and return_carry
    xs = jnp.moveaxis(inputs, time_axis, 0) if time_axis else inputs
    scan = _scan_over_time(
      self.state_axes, self.broadcast_rngs, slice_carry, self.unroll
    )
    carry, ys = scan(self.cell, initial_carry, xs)
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
    rngs: the stream both RNNs draw initial carries from when a call gives
      none (see :class:`RNN`).
  """

  def __init__(
    self,
    forward_rnn: RNNBase,
    backward_rnn: RNNBase,
    *,
    merge_fn: tp.Callable[[Array, Array], Array] = _concatenate,
    time_major=False,
    return_carry=False,
    rngs: nnx.Rngs | nnx.RngStream | bool = True,
  ):
    args = locals()
    for name in ('forward_rnn', 'backward_rnn', 'merge_fn', 'time_major'):
      setattr(self, name, args[name])
    self.return_carry = return_carry
    self.rngs = optional_data(_carry_stream(rngs))

  # The default merge: concatenation on the last axis, forward first.
  merge_fn = staticmethod(_concatenate)

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
    given = locals()
    return_carry, time_major, rngs = (
      getattr(self, k) if given[k] is None else given[k]
      for k in ('return_carry', 'time_major', 'rngs')
    )
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
