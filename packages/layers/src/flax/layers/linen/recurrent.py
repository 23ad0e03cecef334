"""Linen recurrent layers: RNN cells, ``RNN`` and ``Bidirectional``.

Cells take ``(carry, inputs)`` and return ``(new_carry, output)``; their
``initialize_carry(rng, input_shape)`` builds the initial carry. ``RNN``
scans a cell over time with ``nn.scan`` (parameters shared across steps)
and keeps the cell's parameters under ``cell``.
"""

import functools
from typing import Any, Protocol

import jax.numpy as jnp
from jax import random

from flax.core.frozen_dict import FrozenDict as FrozenDict
from flax.layers import initializers
from flax.layers import recurrent as rnn_math
from flax.layers.activations import sigmoid, tanh
from flax.layers.dtypes import promote_dtype
from flax.layers.linen.linear import Conv, Dense, default_kernel_init
from flax.layers.recurrent import flip_sequences as flip_sequences
from flax.layers.dtypes import F32, MaybeDtype
from flax.layers.initializers import ones_init, orthogonal, zeros_init
from flax.linen import Module, compact, nowrap

Array = Any
Carry = Any
Dtype = Any
Initializer = initializers.Initializer


class RNNCellBase(Module):
  """Base class of the RNN cells."""

  @nowrap
  def initialize_carry(self, rng, input_shape: tuple[int, ...]) -> Carry:
    """Initializes the carry of the cell.

    Args:
      rng: random number generator passed to the carry initializer.
      input_shape: a tuple providing the shape of the input to the cell.

    Returns:
      An initialized carry for the given RNN cell.
    """
    raise TypeError(f'{type(self).__name__} does not define initialize_carry.')

  @property
  def num_feature_axes(self) -> int:
    """Number of trailing feature axes of the cell's inputs."""
    return 1


class RNNBase(Protocol):
  """What ``Bidirectional`` expects of its two sequence layers."""

  def __call__(
    self,
    inputs: Array,
    *,
    initial_carry: Carry | None = None,
    init_key: Any = None,
    seq_lengths: Array | None = None,
    return_carry: rnn_math.MaybeFlag = None,
    time_major: rnn_math.MaybeFlag = None,
    reverse: rnn_math.MaybeFlag = None,
    keep_order: rnn_math.MaybeFlag = None,
  ) -> Array | tuple[Carry, Array]: ...


def _dense(cell, side, hidden, use_bias, **kwargs):
  """A ``Dense`` factory of the cell on its inputs (``side='i'``,
  ``kernel_init``) or its hidden state (``'h'``,
  ``recurrent_kernel_init``)."""
  return functools.partial(
    Dense,
    features=hidden,
    use_bias=use_bias,
    kernel_init=cell.kernel_init if side == 'i' else cell.recurrent_kernel_init,
    dtype=cell.dtype,
    param_dtype=cell.param_dtype,
    **kwargs,
  )


class _Cell(RNNCellBase):
  """The cells of this module: carries of ``features``-sized arrays."""

  # Number of carry arrays: 2 for the ``(c, h)`` of the LSTM cells.
  _carry_arity = 1

  @nowrap
  def _carry_shape(self, input_shape):
    n = self.num_feature_axes
    return (*input_shape[:-n], *input_shape[-n:-1], self.features)

  @nowrap
  def initialize_carry(self, rng, input_shape: tuple[int, ...]) -> Carry:
    """Initializes the carry: ``(c, h)`` for the LSTM cells, else one array.

    Args:
      rng: random number generator passed to ``carry_init`` (split in two
        for a ``(c, h)`` carry).
      input_shape: shape of the cell's input, ``(*batch, in_features)``
        (``(*batch, *spatial, in_features)`` for ConvLSTMCell).

    Returns:
      The carry; each array is ``(*batch, features)`` (``(*batch,
      *spatial, features)`` for ConvLSTMCell).
    """
    shape = self._carry_shape(tuple(input_shape))
    if self._carry_arity == 1:
      return self.carry_init(rng, shape, self.param_dtype)
    keys = random.split(rng, self._carry_arity)
    return tuple(self.carry_init(k, shape, self.param_dtype) for k in keys)


class LSTMCell(_Cell):
  r"""LSTM cell.

  .. math::

      i = \sigma(W_{ii} x + W_{hi} h + b_{hi}) \\
      f = \sigma(W_{if} x + W_{hf} h + b_{hf}) \\
      g = \tanh(W_{ig} x + W_{hg} h + b_{hg}) \\
      o = \sigma(W_{io} x + W_{ho} h + b_{ho}) \\
      c' = f * c + i * g \\
      h' = o * \tanh(c')

  Parameters: input kernels ``ii, if, ig, io`` (no bias) and hidden
  kernels ``hi, hf, hg, ho`` (with bias).

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> x = jnp.ones((2, 3))
    >>> layer = nn.LSTMCell(features=4)
    >>> carry = layer.initialize_carry(jax.random.key(1), x.shape)
    >>> variables = layer.init(jax.random.key(0), carry, x)
    >>> new_carry, out = layer.apply(variables, carry, x)
    >>> out.shape
    (2, 4)

  Attributes:
    features: number of output features (the hidden size).
    gate_fn: activation function used for gates (default: sigmoid).
    activation_fn: activation function used for output and memory update
      (default: tanh).
    kernel_init: initializer for the kernels that transform the input.
    recurrent_kernel_init: initializer for the kernels that transform the
      hidden state (default: orthogonal).
    bias_init: initializer for the bias parameters.
    dtype: the dtype of the computation (default: infer from inputs and
      params).
    param_dtype: the dtype passed to parameter initializers.
    carry_init: initializer for the carry.
  """

  _carry_arity = 2

  features: int
  gate_fn: rnn_math.Activation = sigmoid
  activation_fn: rnn_math.Activation = tanh
  kernel_init: Initializer = default_kernel_init
  recurrent_kernel_init: Initializer = orthogonal()
  bias_init: Initializer = zeros_init()
  dtype: MaybeDtype = None
  param_dtype: Dtype = F32
  carry_init: Initializer = zeros_init()

  @compact
  def __call__(self, carry, inputs):
    """Steps ``(c, h)`` over one input; returns ``((c', h'), h')``."""
    c, h = carry
    from_h = _dense(self, 'h', h.shape[-1], True, bias_init=self.bias_init)
    from_x = _dense(self, 'i', h.shape[-1], False)
    pre = {
      k: from_x(name=f'i{k}')(inputs) + from_h(name=f'h{k}')(h)
      for k in rnn_math.LSTM_GATES
    }
    c, h = rnn_math.lstm_update(c, pre, self.gate_fn, self.activation_fn)
    return (c, h), h


class DenseParams(Module):
  """Creates the ``kernel`` (and ``bias``) of a dense layer and returns them
  without applying them, so several can be fused into one matmul.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> from flax.linen.recurrent import DenseParams
    >>> v = DenseParams(4).init(jax.random.key(0), jnp.ones((2, 3)))
    >>> jax.tree_util.tree_map(jnp.shape, v['params'])
    {'bias': (4,), 'kernel': (3, 4)}

  Attributes:
    features: number of output features.
    use_bias: whether to create a bias.
    param_dtype: the dtype passed to parameter initializers.
    precision: numerical precision for users of the returned parameters.
    kernel_init: initializer of the kernel.
    bias_init: initializer of the bias.
  """

  features: int
  use_bias: bool = True
  param_dtype: Dtype = F32
  precision: Any = None
  kernel_init: Initializer = default_kernel_init
  bias_init: Initializer = zeros_init()

  @compact
  def __call__(self, inputs: Array) -> tuple[Array, Array | None]:
    """Returns ``(kernel, bias)`` for inputs of this last-axis size."""
    shape = (jnp.shape(inputs)[-1], self.features)
    kernel = self.param('kernel', self.kernel_init, shape, self.param_dtype)
    if not self.use_bias:
      return kernel, None
    bias = self.param(
      'bias', self.bias_init, (self.features,), self.param_dtype
    )
    return kernel, bias


class OptimizedLSTMCell(LSTMCell):
  """More efficient LSTM cell: one matmul for the four gates.

  Its parameters have the same names and shapes as :class:`LSTMCell`'s
  (so checkpoints are interchangeable); the kernels are concatenated at call
  time. Faster for hidden sizes up to about 2048.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> x = jnp.ones((2, 3))
    >>> layer = nn.OptimizedLSTMCell(features=4)
    >>> carry = layer.initialize_carry(jax.random.key(1), x.shape)
    >>> variables = layer.init(jax.random.key(0), carry, x)
    >>> sorted(variables['params'])
    ['hf', 'hg', 'hi', 'ho', 'if', 'ig', 'ii', 'io']
  """

  @compact
  def __call__(self, carry, inputs):
    """Steps ``(c, h)`` with two fused matmuls; returns ``((c', h'), h')``."""
    c, h = carry
    hidden = h.shape[-1]
    gates = rnn_math.LSTM_GATES

    def params(side, source, kernel_init, use_bias):
      return [
        DenseParams(
          features=hidden,
          use_bias=use_bias,
          param_dtype=self.param_dtype,
          kernel_init=kernel_init,
          bias_init=self.bias_init,
          name=side + gate,
        )(source)
        for gate in gates
      ]

    from_x = params('i', inputs, self.kernel_init, False)
    from_h = params('h', h, self.recurrent_kernel_init, True)
    # One promotion per matmul operand group, then one fused matmul each.
    x, *kx = promote_dtype(inputs, *(k for k, _ in from_x), dtype=self.dtype)
    hh, *kb = promote_dtype(
      h, *(k for k, _ in from_h), *(b for _, b in from_h), dtype=self.dtype
    )
    pre = {
      k: a + b
      for k, a, b in zip(
        gates,
        rnn_math.concat_dense(x, kx),
        rnn_math.concat_dense(hh, kb[:4], kb[4:]),
      )
    }
    c, h = rnn_math.lstm_update(c, pre, self.gate_fn, self.activation_fn)
    return (c, h), h


class GRUCell(_Cell):
  r"""GRU cell.

  .. math::

      r = \sigma(W_{ir} x + b_{ir} + W_{hr} h) \\
      z = \sigma(W_{iz} x + b_{iz} + W_{hz} h) \\
      n = \tanh(W_{in} x + b_{in} + r * (W_{hn} h + b_{hn})) \\
      h' = (1 - z) * n + z * h

  Parameters: ``ir, iz, in`` (with bias), ``hr, hz`` (no bias), ``hn``
  (with bias).

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> x = jnp.ones((2, 3))
    >>> layer = nn.GRUCell(features=4)
    >>> carry = layer.initialize_carry(jax.random.key(1), x.shape)
    >>> variables = layer.init(jax.random.key(0), carry, x)
    >>> layer.apply(variables, carry, x)[1].shape
    (2, 4)

  Attributes:
    features: number of output features.
    gate_fn: activation function used for gates (default: sigmoid).
    activation_fn: activation function used for output and memory update
      (default: tanh).
    kernel_init: initializer for the kernels that transform the input.
    recurrent_kernel_init: initializer for the kernels that transform the
      hidden state (default: orthogonal).
    bias_init: initializer for the bias parameters.
    dtype: the dtype of the computation.
    param_dtype: the dtype passed to parameter initializers.
    carry_init: initializer for the carry.
  """

  features: int
  gate_fn: rnn_math.Activation = sigmoid
  activation_fn: rnn_math.Activation = tanh
  kernel_init: Initializer = default_kernel_init
  recurrent_kernel_init: Initializer = orthogonal()
  bias_init: Initializer = zeros_init()
  dtype: MaybeDtype = None
  param_dtype: Dtype = F32
  carry_init: Initializer = zeros_init()

  @compact
  def __call__(self, carry, inputs):
    """Steps the hidden state ``h``; returns ``(h', h')``."""
    h = carry
    from_h = _dense(self, 'h', h.shape[-1], False, bias_init=self.bias_init)
    from_x = _dense(self, 'i', h.shape[-1], True, bias_init=self.bias_init)
    r, z = (
      self.gate_fn(from_x(name=f'i{k}')(inputs) + from_h(name=f'h{k}')(h))
      for k in 'rz'
    )
    # Of the hidden transforms only ``hn`` is biased: ``r`` scales it.
    hn = from_h(name='hn', use_bias=True)
    n = self.activation_fn(from_x(name='in')(inputs) + r * hn(h))
    h = rnn_math.blend(z, n, h)
    return h, h


class MGUCell(_Cell):
  r"""Minimal gated unit (MGU) cell (https://arxiv.org/abs/1603.09420).

  .. math::

      f = \sigma(W_{if} x + b_{if} + W_{hf} h) \\
      n = \tanh(W_{in} x + b_{in} + f * (W_{hn} h + b_{hn})) \\
      h' = (1 - f) * n + f * h

  Parameters: ``if``, ``in`` (with bias), ``hf`` (no bias), ``hn`` (with
  bias, except with ``reset_gate=False``: then ``b_{in}`` covers it).

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> x = jnp.ones((2, 3))
    >>> layer = nn.MGUCell(features=4)
    >>> carry = layer.initialize_carry(jax.random.key(1), x.shape)
    >>> variables = layer.init(jax.random.key(0), carry, x)
    >>> sorted(variables['params'])
    ['hf', 'hn', 'if', 'in']

  Attributes:
    features: number of output features.
    gate_fn: activation function used for the gate (default: sigmoid).
    activation_fn: activation function used for the candidate (tanh).
    kernel_init: initializer for the input kernels.
    recurrent_kernel_init: initializer for the hidden kernels.
    forget_bias_init: initializer of the forget gate bias (ones).
    activation_bias_init: initializer of the candidate biases (zeros).
    dtype: the dtype of the computation.
    param_dtype: the dtype passed to parameter initializers.
    carry_init: initializer for the carry.
    reset_gate: whether the forget gate multiplies the hidden transform in
      the candidate.
  """

  features: int
  gate_fn: rnn_math.Activation = sigmoid
  activation_fn: rnn_math.Activation = tanh
  kernel_init: Initializer = default_kernel_init
  recurrent_kernel_init: Initializer = orthogonal()
  forget_bias_init: Initializer = ones_init()
  activation_bias_init: Initializer = zeros_init()
  dtype: MaybeDtype = None
  param_dtype: Dtype = F32
  carry_init: Initializer = zeros_init()
  reset_gate: bool = True

  @compact
  def __call__(self, carry, inputs):
    """Steps the hidden state ``h``; returns ``(h', h')``."""
    h = carry
    from_h = _dense(self, 'h', h.shape[-1], False)
    from_x = _dense(self, 'i', h.shape[-1], True)
    forget_x = from_x(name='if', bias_init=self.forget_bias_init)(inputs)
    f = self.gate_fn(forget_x + from_h(name='hf')(h))
    cand_bias = self.activation_bias_init
    x = from_x(name='in', bias_init=cand_bias)(inputs)
    # Without the reset gate a bias of ``hn`` would repeat the one of ``in``.
    hn = from_h(name='hn', use_bias=self.reset_gate, bias_init=cand_bias)(h)
    if self.reset_gate:
      hn = f * hn
    h = rnn_math.blend(f, self.activation_fn(x + hn), h)
    return h, h


class SimpleCell(_Cell):
  r"""Simple (Elman) RNN cell: ``h' = tanh(W_i x + b + W_h h)``.

  Parameters: ``i`` (with bias) and ``h`` (no bias).

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> x = jnp.ones((2, 3))
    >>> layer = nn.SimpleCell(features=4)
    >>> carry = layer.initialize_carry(jax.random.key(1), x.shape)
    >>> variables = layer.init(jax.random.key(0), carry, x)
    >>> jax.tree_util.tree_map(jnp.shape, variables['params'])
    {'h': {'kernel': (4, 4)}, 'i': {'bias': (4,), 'kernel': (3, 4)}}

  Attributes:
    features: number of output features.
    activation_fn: activation function (tanh).
    kernel_init: initializer for the input kernel.
    recurrent_kernel_init: initializer for the hidden kernel.
    bias_init: initializer for the bias.
    dtype: the dtype of the computation.
    param_dtype: the dtype passed to parameter initializers.
    carry_init: initializer for the carry.
    residual: add the previous carry before the activation.
  """

  features: int
  activation_fn: rnn_math.Activation = tanh
  kernel_init: Initializer = default_kernel_init
  recurrent_kernel_init: Initializer = orthogonal()
  bias_init: Initializer = zeros_init()
  dtype: MaybeDtype = None
  param_dtype: Dtype = F32
  carry_init: Initializer = zeros_init()
  residual: bool = False

  @compact
  def __call__(self, carry, inputs):
    """Steps the hidden state; returns ``(h', h')``."""
    hidden = carry.shape[-1]
    dense_h = _dense(self, 'h', hidden, False)
    dense_i = _dense(self, 'i', hidden, True, bias_init=self.bias_init)
    new_carry = dense_i(name='i')(inputs) + dense_h(name='h')(carry)
    if self.residual:
      new_carry += carry
    new_carry = self.activation_fn(new_carry)
    return new_carry, new_carry


# The ConvLSTMCell fields handed unchanged to both of its convolutions.
_CONV_LSTM_FORWARDED = (
  'strides',
  'padding',
  'use_bias',
  'dtype',
  'param_dtype',
)


class ConvLSTMCell(_Cell):
  r"""A convolutional LSTM cell.

  The input-to-hidden (``ih``) and hidden-to-hidden (``hh``) transforms are
  convolutions with ``4 * features`` filters; the gates are split in the
  order ``i, g, f, o`` and the forget gate gets a +1 bias.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> x = jnp.ones((2, 8, 8, 3))
    >>> layer = nn.ConvLSTMCell(features=4, kernel_size=(3, 3))
    >>> carry = layer.initialize_carry(jax.random.key(1), x.shape)
    >>> variables = layer.init(jax.random.key(0), carry, x)
    >>> layer.apply(variables, carry, x)[1].shape
    (2, 8, 8, 4)

  Attributes:
    features: number of convolution filters.
    kernel_size: shape of the convolutional kernel.
    strides: a sequence of ``n`` integers, the inter-window strides.
    padding: ``'SAME'``, ``'VALID'`` or ``(low, high)`` pairs.
    use_bias: whether to add a bias to the output (default: True).
    dtype: the dtype of the computation.
    param_dtype: the dtype passed to parameter initializers.
    carry_init: initializer for the carry.
  """

  _carry_arity = 2

  features: int
  kernel_size: Any
  strides: Any = None
  padding: Any = 'SAME'
  use_bias: bool = True
  dtype: MaybeDtype = None
  param_dtype: Dtype = F32
  carry_init: Initializer = zeros_init()

  @compact
  def __call__(self, carry, inputs):
    """Steps ``(c, h)`` over ``(batch, *spatial, features)`` inputs."""
    c, h = carry
    shared = {k: getattr(self, k) for k in _CONV_LSTM_FORWARDED}

    def conv(name, x):
      return Conv(4 * self.features, self.kernel_size, name=name, **shared)(x)

    gates = conv('ih', inputs) + conv('hh', h)
    new_c, new_h = rnn_math.conv_lstm_gates(gates, c)
    return (new_c, new_h), new_h

  @property
  def num_feature_axes(self) -> int:
    ks = self.kernel_size
    return (1 if isinstance(ks, int) else len(ks)) + 1


# RNN and Bidirectional live in flax.layers.linen.rnn; import them last so that
# the cells above exist when that module imports RNNCellBase from here.
from flax.layers.linen.rnn import Bidirectional as Bidirectional  # noqa: E402
from flax.layers.linen.rnn import RNN as RNN  # noqa: E402

__all__ = [
  'Bidirectional',
  'DenseParams',
  'RNNBase',
  'ConvLSTMCell',
  'GRUCell',
  'LSTMCell',
  'MGUCell',
  'OptimizedLSTMCell',
  'RNN',
  'RNNCellBase',
  'SimpleCell',
  'flip_sequences',
]
