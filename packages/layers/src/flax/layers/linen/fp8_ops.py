"""Linen FP8 dot products with delayed scaling (``flax.linen.fp8_ops``).

The modules here replace a layer's ``dot_general`` (``nn.Dense(...,
dot_general_cls=nn.Fp8DotGeneral)``) or an attention einsum
(``qk_attn_weights_einsum_cls=nn.Fp8Einsum``). Each keeps its FP8 state
in the ``'_overwrite_with_gradient'`` collection: a scale (``(1,)``, ones)
and an amax history (``(amax_history_length,)``, zeros) for the input, the
kernel and the output gradient. The gradient of that collection *is* its
next value, so a training step replaces the collection by its gradient
instead of handing it to the optimizer
(``flax.training.train_state.TrainState.apply_gradients`` does this).

>>> import jax, jax.numpy as jnp
>>> import flax.linen as nn
>>> model = nn.Dense(3, dot_general_cls=nn.Fp8DotGeneral)
>>> variables = model.init(jax.random.key(0), jnp.ones((2, 4)))
>>> jax.tree_util.tree_map(jnp.shape, variables['_overwrite_with_gradient'])
{'Fp8DirectDotGeneralOp_0': {'input_amax_history': (1024,), 'input_scale': (1,), 'kernel_amax_history': (1024,), 'kernel_scale': (1,), 'output_grad_amax_history': (1024,), 'output_grad_scale': (1,)}}

The functions of ``flax.layers.fp8`` (quantization, scale updates and the
custom-gradient ops) and the ``fm32`` meta dtype are available here too.
"""

import functools
import warnings
from typing import Any

import jax.numpy as jnp

from flax.layers.fp8 import compute_amax_history as compute_amax_history
from flax.layers.fp8 import compute_scale as compute_scale
from flax.layers.fp8 import dequantize as dequantize
from flax.layers.fp8 import (
  dot_general_transpose_lhs as dot_general_transpose_lhs,
)
from flax.layers.fp8 import (
  dot_general_transpose_rhs as dot_general_transpose_rhs,
)
from flax.layers.fp8 import (
  dot_general_with_precision as dot_general_with_precision,
)
from flax.layers.fp8 import (
  dot_general_with_precision_jvp as dot_general_with_precision_jvp,
)
from flax.layers.fp8 import fp8_scaled_dot_general as fp8_scaled_dot_general
from flax.layers.fp8 import get_fp8_max as get_fp8_max
from flax.layers.fp8 import in_q as in_q
from flax.layers.fp8 import in_q_bwd as in_q_bwd
from flax.layers.fp8 import in_q_fwd as in_q_fwd
from flax.layers.fp8 import in_qdq as in_qdq
from flax.layers.fp8 import in_qdq_bwd as in_qdq_bwd
from flax.layers.fp8 import in_qdq_fwd as in_qdq_fwd
from flax.layers.fp8 import out_dq as out_dq
from flax.layers.fp8 import out_dq_bwd as out_dq_bwd
from flax.layers.fp8 import out_dq_fwd as out_dq_fwd
from flax.layers.fp8 import out_qdq as out_qdq
from flax.layers.fp8 import out_qdq_bwd as out_qdq_bwd
from flax.layers.fp8 import out_qdq_fwd as out_qdq_fwd
from flax.layers.fp8 import qdq as qdq
from flax.layers.fp8 import quantize as quantize
from flax.layers.fp8 import (
  quantize_dequantize_update as quantize_dequantize_update,
)
from flax.layers.fp8 import quantized_dot as quantized_dot
from flax.layers.fp8 import quantized_dot_bwd as quantized_dot_bwd
from flax.layers.fp8 import quantized_dot_fwd as quantized_dot_fwd
from flax.layers.fp8 import update_fp8_meta as update_fp8_meta
from flax.layers.fp8_meta import CAN_USE_EARRAY as CAN_USE_EARRAY
from flax.layers.fp8_meta import Fp8MetaTyRules as Fp8MetaTyRules
from flax.layers.fp8_meta import fm32 as fm32
from flax.layers.fp8_meta import fp8_meta_dtype as fp8_meta_dtype
from flax.layers.fp8_meta import (
  fp8_meta_dtype_wrapper as fp8_meta_dtype_wrapper,
)
from flax.layers.fp8_meta import fp32_max_grad as fp32_max_grad
from flax.linen import Module

DType = Any

# The collection holding the FP8 state; its gradient is its next value.
OVERWRITE_WITH_GRADIENT = '_overwrite_with_gradient'

# The three FP8 operands of a dot, each with a scale and an amax history.
_ROLES = ('input', 'kernel', 'output_grad')


class Fp8DotGeneralBase(Module):
  """The FP8 state shared by the FP8 dot modules.

  ``setup`` declares, in the ``'_overwrite_with_gradient'`` collection, an
  amax history (zeros, float32, ``(amax_history_length,)``) and a scale
  (ones, float32, ``(1,)``) for each of ``input``, ``kernel`` and
  ``output_grad``: ``input_amax_history``, ``input_scale`` and so on.

  Attributes:
    amax_history_length: how many past amax values each history keeps.
    e4m3_dtype: FP8 dtype of the forward operands.
    e5m2_dtype: FP8 dtype of the output gradient.
  """

  amax_history_length: int = 1024
  e4m3_dtype: DType = jnp.float8_e4m3fn
  e5m2_dtype: DType = jnp.float8_e5m2

  def setup(self) -> None:
    # All histories first, then all scales: the collection's order.
    for name, init, shape in (
      ('amax_history', jnp.zeros, (self.amax_history_length,)),
      ('scale', jnp.ones, (1,)),
    ):
      for role in _ROLES:
        variable = self.variable(
          OVERWRITE_WITH_GRADIENT, f'{role}_{name}', init, shape, jnp.float32
        )
        setattr(self, f'{role}_{name}', variable)

  def _operand_state(self, role):
    """``(scale, amax_history)`` of one operand."""
    scale = getattr(self, f'{role}_scale').value
    return scale, getattr(self, f'{role}_amax_history').value

  def _scaled_dot_state(self):
    """The state as ``fp8_scaled_dot_general`` keyword arguments."""
    (lhs_scale, lhs_history), (rhs_scale, rhs_history), (g_scale, g_hist) = (
      self._operand_state(role) for role in _ROLES
    )
    return dict(
      lhs_scale=lhs_scale,
      rhs_scale=rhs_scale,
      grad_scale=g_scale,
      lhs_amax_history=lhs_history,
      rhs_amax_history=rhs_history,
      grad_amax_history=g_hist,
    )


def _dot_operands(module, args):
  """``(x, kernel, dimension_numbers, compute_dtype)`` of a dot call.

  The compute dtype is the kernel's (that of the layer owning it); the
  input is cast to it.
  """
  if len(args) != 3:
    raise AssertionError(
      f'{type(module).__name__} is called like lax.dot_general: '
      f'(inputs, kernel, dimension_numbers); got {len(args)} positional '
      'arguments.'
    )
  x, kernel, dimension_numbers = args
  compute_dtype = kernel.dtype
  return jnp.asarray(x, compute_dtype), kernel, dimension_numbers, compute_dtype


class Fp8DotGeneralOp(Fp8DotGeneralBase):
  """FP8 ``dot_general`` by fake quantization (deprecated).

  Both operands are quantized to ``e4m3_dtype`` and back (``in_qdq``), the
  dot runs in the kernel's dtype, and the output gradient is quantized to
  ``e5m2_dtype`` and back (``out_qdq``). Called like ``lax.dot_general``
  with three positional arguments; keyword arguments such as
  ``precision`` are accepted for compatibility and not used (the dot runs
  at default precision in the kernel's dtype). Constructing one warns
  with a ``DeprecationWarning``; use ``Fp8DirectDotGeneralOp`` (also
  ``Fp8DotGeneral``) or ``Fp8Einsum``.
  """

  def __post_init__(self):
    if type(self) is Fp8DotGeneralOp:
      warnings.warn(
        'The Fp8DotGeneralOp is deprecated: it only simulates FP8 by '
        'quantizing and dequantizing. Use Fp8DirectDotGeneralOp or '
        'Fp8Einsum instead.',
        DeprecationWarning,
        stacklevel=2,
      )
    super().__post_init__()

  def __call__(self, *args, **kwargs):
    x, kernel, dimension_numbers, compute_dtype = _dot_operands(self, args)
    x_qdq = in_qdq(
      compute_dtype, self.e4m3_dtype, x, *self._operand_state('input')
    )
    k_qdq = in_qdq(
      compute_dtype, self.e4m3_dtype, kernel, *self._operand_state('kernel')
    )
    y = dot_general_with_precision(x_qdq, k_qdq, dimension_numbers)
    return out_qdq(
      compute_dtype, self.e5m2_dtype, y, *self._operand_state('output_grad')
    )


class NANOOFp8DotGeneralOp(Fp8DotGeneralOp):
  """``Fp8DotGeneralOp`` with the NANOO FP8 formats (no negative zero).

  Quantizes to ``float8_e4m3fnuz`` / ``float8_e5m2fnuz``, the formats of
  AMD accelerators, and does not warn.
  """

  e4m3_dtype: DType = jnp.float8_e4m3fnuz
  e5m2_dtype: DType = jnp.float8_e5m2fnuz


class Fp8DirectDotGeneralOp(Fp8DotGeneralBase):
  """FP8 ``dot_general`` computed as a real FP8 dot.

  The operands are quantized to ``float8_e4m3fn`` and multiplied in FP8
  (``fp8_scaled_dot_general``); the product comes back in the kernel's
  dtype. Called like ``lax.dot_general`` with three positional arguments;
  keyword arguments such as ``precision`` or ``preferred_element_type``
  are accepted for compatibility and not used. The scaled FP8 dot always
  uses ``float8_e4m3fn`` / ``float8_e5m2``, whatever ``e4m3_dtype`` and
  ``e5m2_dtype`` say (as in Flax 0.12.8). ``nn.Fp8DotGeneral`` is this
  class.
  """

  def __call__(self, *args, **kwargs):
    x, kernel, dimension_numbers, compute_dtype = _dot_operands(self, args)
    return fp8_scaled_dot_general(
      x,
      kernel,
      dimension_numbers,
      preferred_element_type=compute_dtype,
      **self._scaled_dot_state(),
      quantize_compute_type=compute_dtype,
    )


Fp8DotGeneral = Fp8DirectDotGeneralOp


class Fp8Einsum(Fp8DotGeneralBase):
  """FP8 ``jnp.einsum``: each pairwise contraction is an FP8 dot.

  The left operand is cast to the right operand's dtype; ``jnp.einsum``
  then runs with ``fp8_scaled_dot_general`` (bound to this module's state)
  as its dot. The input state follows the first operand of each dot
  ``jnp.einsum`` issues (for some equations that is ``rhs``). The scaled
  FP8 dot always uses ``float8_e4m3fn`` / ``float8_e5m2``, whatever
  ``e4m3_dtype`` and ``e5m2_dtype`` say (as in Flax 0.12.8).

  Example::

    >>> import jax, jax.numpy as jnp
    >>> from flax.linen import fp8_ops
    >>> einsum = fp8_ops.Fp8Einsum(amax_history_length=4)
    >>> x, k = jnp.ones((2, 3)), jnp.ones((3, 5))
    >>> variables = einsum.init(jax.random.key(0), 'ab,bc->ac', x, k)
    >>> einsum.apply(variables, 'ab,bc->ac', x, k).shape
    (2, 5)
  """

  def __call__(
    self,
    eqn,
    lhs,
    rhs,
    precision=None,
    preferred_element_type=None,
  ):
    """Computes ``jnp.einsum(eqn, lhs, rhs)`` with FP8 dots.

    Args:
      eqn: the einsum equation.
      lhs: the left operand, cast to ``rhs.dtype``.
      rhs: the right operand (usually the kernel).
      precision: passed to ``jnp.einsum``; the FP8 dots do not use it and
        warn when it is set.
      preferred_element_type: dtype of the result (default: that of the
        operands).

    Returns:
      The einsum result.
    """
    compute_dtype = rhs.dtype
    lhs = jnp.asarray(lhs, compute_dtype)
    dot = functools.partial(
      fp8_scaled_dot_general,
      **self._scaled_dot_state(),
      quantize_compute_type=compute_dtype,
    )
    return jnp.einsum(
      eqn,
      lhs,
      rhs,
      precision=precision,
      preferred_element_type=preferred_element_type,
      _dot_general=dot,
    )
