"""FP8 dot products with delayed scaling, framework-neutral.

Each FP8 operand carries two pieces of state: a ``scale`` (shape ``(1,)``)
and an ``amax_history`` (the recent absolute maxima, newest first). A use
of the operand

1. derives a new scale from the largest amax in the history, so that it
   maps to the largest finite value of the FP8 dtype (the old scale is kept
   while the history holds no finite positive amax),
2. records the operand's own amax at the front of the history, and
3. quantizes the operand with the new scale.

The new scale and history come back as the *gradients* of the old ones
(the ``custom_vjp`` rules below), so an optimizer step that overwrites
those variables with their gradients (Flax's ``_overwrite_with_gradient``
collection) advances the state. Forward operands use ``e4m3``; output
gradients use ``e5m2``.

>>> import jax.numpy as jnp
>>> from flax.layers import fp8
>>> x = jnp.array([0.3, -1.7, 2.5])
>>> scale, history = jnp.ones((1,)), jnp.array([0.0, 4.0, 2.0])
>>> new_scale, new_history = fp8.update_fp8_meta(
...   x, jnp.float8_e4m3fn, scale, history)
>>> round(float(new_scale[0]) * 448, 4), new_history.tolist()
(4.0, [2.5, 2.0, 0.0])
"""

import functools
import warnings

import jax
import jax.numpy as jnp
from jax import lax

from flax.layers.fp8_meta import _meta_of

Array = jax.Array

# The FP8 formats the ops quantize to.
_FP8_DTYPES = (
  jnp.float8_e4m3fn,
  jnp.float8_e5m2,
  jnp.float8_e4m3fnuz,
  jnp.float8_e5m2fnuz,
)


def get_fp8_max(fp8_dtype, out_dtype):
  """The largest finite value of ``fp8_dtype``, as a scalar of ``out_dtype``.

  >>> import jax.numpy as jnp
  >>> float(get_fp8_max(jnp.float8_e4m3fn, jnp.float32))
  448.0
  """
  if fp8_dtype not in _FP8_DTYPES:
    raise AssertionError(
      f'get_fp8_max: {fp8_dtype} is not an FP8 dtype the FP8 ops support '
      '(float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz).'
    )
  return jnp.finfo(fp8_dtype).max.astype(out_dtype)


def quantize(x, q_dtype, scale, compute_dtype):
  """``x / scale`` saturated to the range of ``q_dtype``, cast to it.

  >>> import jax.numpy as jnp
  >>> quantize(jnp.array([1.0, 900.0]), jnp.float8_e4m3fn, jnp.ones((1,)),
  ...          jnp.float32).astype(jnp.float32).tolist()
  [1.0, 448.0]
  """
  limit = get_fp8_max(q_dtype, compute_dtype)
  divisor = jnp.broadcast_to(scale.astype(compute_dtype), x.shape)
  return jnp.clip(x / divisor, -limit, limit).astype(q_dtype)


def dequantize(x, dq_dtype, scale):
  """``x`` cast to ``dq_dtype`` and multiplied back by ``scale``."""
  factor = jnp.broadcast_to(scale.astype(dq_dtype), x.shape)
  return x.astype(dq_dtype) * factor


def qdq(x, q_dtype, scale, compute_dtype):
  """Quantizes ``x`` and dequantizes it back to ``x.dtype``."""
  return dequantize(quantize(x, q_dtype, scale, compute_dtype), x.dtype, scale)


def compute_scale(amax, scale, fp8_max, margin=0):
  """The scale that maps ``amax`` to ``fp8_max / 2**margin``.

  Where ``amax`` is not a finite positive number, ``scale`` is kept.

  >>> import jax.numpy as jnp
  >>> compute_scale(jnp.float32(4.0), jnp.ones((1,)), 448.0, margin=1)
  Array([0.01785714], dtype=float32)
  """
  # Worked in reciprocals (how much a value is multiplied by before the
  # cast), then turned back into a scale.
  proposed = fp8_max / amax / (2**margin)
  usable = (amax > 0.0) & jnp.isfinite(amax)
  return 1.0 / jnp.where(usable, proposed, 1.0 / scale)


def compute_amax_history(x, amax_history):
  """The history with ``max(|x|)`` written at the front.

  The history is rotated one step towards the front first, so the entry
  that was second is the one that drops out.
  """
  amax = jnp.max(jnp.abs(x)).astype(amax_history.dtype)
  return jnp.roll(amax_history, -1, axis=0).at[0].set(amax)


def update_fp8_meta(x, q_dtype, scale, amax_history):
  """The ``(new_scale, new_amax_history)`` after one use of ``x``.

  ``scale`` and ``amax_history`` may both be in an fp8 meta dtype
  (``fm32``); the results then are too.
  """
  meta = _meta_of(scale) and _meta_of(amax_history)
  if meta:
    scale = lax.convert_element_type(scale, meta.float_dtype)
    amax_history = lax.convert_element_type(amax_history, meta.float_dtype)
  fp8_max = get_fp8_max(q_dtype, jnp.float32)
  new_scale = compute_scale(jnp.max(amax_history, axis=0), scale, fp8_max)
  new_history = compute_amax_history(x, amax_history)
  if meta:
    new_scale = lax.convert_element_type(new_scale, meta)
    new_history = lax.convert_element_type(new_history, meta)
  return new_scale, new_history


def _physical(a):
  meta = _meta_of(a)
  return lax.convert_element_type(a, meta.float_dtype) if meta else a


def quantize_dequantize_update(x, q_dtype, scale, amax_history, compute_dtype):
  """``(qdq(x) with the new scale, new_scale, new_amax_history)``."""
  new_scale, new_history = update_fp8_meta(x, q_dtype, scale, amax_history)
  qx = qdq(x, q_dtype, _physical(new_scale), compute_dtype)
  return qx, new_scale, new_history


# -- operands quantized and dequantized (the "qdq" path) ----------------------


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def in_qdq(compute_dtype, q_dtype, inp, scale, amax_history):
  """Fake-quantizes a forward operand; its gradient passes straight through.

  The cotangents of ``scale`` and ``amax_history`` are their new values.
  """
  return in_qdq_fwd(compute_dtype, q_dtype, inp, scale, amax_history)[0]


def in_qdq_fwd(compute_dtype, q_dtype, inp, scale, amax_history):
  qin, *meta = quantize_dequantize_update(
    inp, q_dtype, scale, amax_history, compute_dtype
  )
  return qin, tuple(meta)


def in_qdq_bwd(compute_dtype, q_dtype, res, g):
  # ``g`` goes straight through; the meta state's cotangents are its new
  # values, saved by the forward pass.
  return (g, *res)


in_qdq.defvjp(in_qdq_fwd, in_qdq_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def out_qdq(compute_dtype, q_dtype, out, scale, amax_history):
  """Identity forward; fake-quantizes the output gradient on the way back.

  The cotangents of ``scale`` and ``amax_history`` are their new values,
  derived from the output gradient.
  """
  return out


def out_qdq_fwd(compute_dtype, q_dtype, out, scale, amax_history):
  return out, (scale, amax_history)


def out_qdq_bwd(compute_dtype, q_dtype, res, g):
  scale, amax_history = res
  return quantize_dequantize_update(
    g, q_dtype, scale, amax_history, compute_dtype
  )


out_qdq.defvjp(out_qdq_fwd, out_qdq_bwd)


def _warn_ignored(what, message):
  warnings.warn(f'{what} {message}', UserWarning, stacklevel=3)


@functools.partial(jax.custom_jvp, nondiff_argnums=(2, 3, 4))
def dot_general_with_precision(
  lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None
):
  """``lax.dot_general`` at default precision, differentiated at HIGHEST.

  ``precision`` and ``preferred_element_type`` are not used (a warning says
  so when one is given): the forward dot always runs at the default
  precision in the operands' dtype.
  """
  if precision is not None or preferred_element_type is not None:
    _warn_ignored(
      'The function dot_general_with_precision',
      'will set the precision/preferred_element_type and disregard any '
      'provided values.',
    )
  return lax.dot_general(
    lhs, rhs, dimension_numbers, precision=lax.Precision.DEFAULT
  )


def dot_general_with_precision_jvp(
  dimension_numbers, precision, preferred_element_type, primals, tangents
):
  (lhs, rhs), (d_lhs, d_rhs) = primals, tangents

  def dot(a, b, level):
    return lax.dot_general(a, b, dimension_numbers, precision=level)

  # Product rule, each term at the highest precision.
  high = lax.Precision.HIGHEST
  tangent = dot(d_lhs, rhs, high) + dot(lhs, d_rhs, high)
  return dot(lhs, rhs, lax.Precision.DEFAULT), tangent


dot_general_with_precision.defjvp(dot_general_with_precision_jvp)


# -- operands quantized for a real FP8 dot (the "direct" path) ----------------


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def in_q(compute_dtype, q_dtype, inp, scale, amax_history):
  """Quantizes a forward operand: returns ``(q_inp, new_scale)``.

  No gradient flows to ``inp`` through this op (``quantized_dot`` carries
  it); the cotangents of ``scale`` and ``amax_history`` are their new
  values.
  """
  return in_q_fwd(compute_dtype, q_dtype, inp, scale, amax_history)[0]


def in_q_fwd(compute_dtype, q_dtype, inp, scale, amax_history):
  meta = update_fp8_meta(inp, q_dtype, scale, amax_history)
  qin = quantize(inp, q_dtype, _physical(meta[0]), compute_dtype)
  return (qin, meta[0]), meta


def in_q_bwd(compute_dtype, q_dtype, res, _):
  # No cotangent for the operand (``quantized_dot`` gives it one); the meta
  # state's are its new values.
  return (None, *res)


in_q.defvjp(in_q_fwd, in_q_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def out_dq(dq_type, lhs_scale, rhs_scale, out):
  """Dequantizes an FP8 dot's output with the product of the two scales.

  The output gradient passes to ``out`` unchanged; the scales get none.
  """
  return out_dq_fwd(dq_type, lhs_scale, rhs_scale, out)[0]


def out_dq_fwd(dq_type, lhs_scale, rhs_scale, out):
  return dequantize(out, dq_type, lhs_scale * rhs_scale), None


def out_dq_bwd(dq_type, _, g):
  return None, None, g


out_dq.defvjp(out_dq_fwd, out_dq_bwd)


def _complement(ndim, *groups):
  taken = {d for group in groups for d in group}
  return [d for d in range(ndim) if d not in taken]


def dot_general_transpose_lhs(
  g,
  x,
  y,
  *,
  dimension_numbers,
  precision,
  preferred_element_type,
  swap_ans=False,
):
  """The cotangent of ``x`` in ``dot_general(x, y, dimension_numbers)``.

  ``g`` is the cotangent of the output; only ``x``'s rank is read. With
  ``swap_ans`` the output is taken to hold ``y``'s free dimensions before
  ``x``'s (the layout of ``dot_general(y, x)``).
  """
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  x_free = _complement(x.ndim, x_contract, x_batch)
  y_free = _complement(y.ndim, y_contract, y_batch)
  n_batch = len(x_batch)
  # Where y's free dimensions sit in the output ``g``.
  first = n_batch if swap_ans else n_batch + len(x_free)
  g_y_free = list(range(first, first + len(y_free)))
  g_batch = list(range(n_batch))
  result = lax.dot_general(
    g,
    y,
    ((g_y_free, y_free), (g_batch, list(y_batch))),
    precision=precision,
    preferred_element_type=preferred_element_type,
  )
  # ``result`` holds: batch, x's free dims, then y's remaining (contracted)
  # dims in ascending order, each standing for its paired x dimension.
  paired = dict(zip(y_contract, x_contract))
  layout = list(x_batch) + x_free + [paired[d] for d in sorted(y_contract)]
  return lax.transpose(result, tuple(layout.index(d) for d in range(x.ndim)))


def dot_general_transpose_rhs(
  g, x, y, *, dimension_numbers, precision, preferred_element_type
):
  """The cotangent of ``y`` in ``dot_general(x, y, dimension_numbers)``."""
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  return dot_general_transpose_lhs(
    g,
    y,
    x,
    dimension_numbers=((y_contract, x_contract), (y_batch, x_batch)),
    precision=precision,
    preferred_element_type=preferred_element_type,
    swap_ans=True,
  )


@functools.partial(jax.custom_vjp, nondiff_argnums=(8, 9))
def quantized_dot(
  lhs: Array,
  q_lhs: Array,
  lhs_scale: Array,
  rhs: Array,
  q_rhs: Array,
  rhs_scale: Array,
  out_grad_scale: Array,
  out_grad_amax_history: Array,
  dimension_numbers,
  preferred_element_type=None,
):
  """``dot_general`` of two quantized operands (the output stays scaled).

  On the way back the output gradient is quantized to ``float8_e5m2`` with
  its own delayed scale, and both operand cotangents come out of FP8 dots,
  dequantized; the cotangents of ``out_grad_scale`` and
  ``out_grad_amax_history`` are their new values.
  """
  return _fp8_dot(q_lhs, q_rhs, dimension_numbers, preferred_element_type)


def _fp8_dot(q_lhs, q_rhs, dimension_numbers, preferred_element_type):
  return lax.dot_general(
    q_lhs,
    q_rhs,
    dimension_numbers,
    precision=lax.Precision.DEFAULT,
    preferred_element_type=preferred_element_type,
  )


def quantized_dot_fwd(
  lhs: Array,
  q_lhs: Array,
  lhs_scale: Array,
  rhs: Array,
  q_rhs: Array,
  rhs_scale: Array,
  out_grad_scale: Array,
  out_grad_amax_history: Array,
  dimension_numbers,
  preferred_element_type,
):
  out = _fp8_dot(q_lhs, q_rhs, dimension_numbers, preferred_element_type)
  # Saved per side: (operand, its quantized form, its scale), then the
  # output gradient's meta state.
  sides = ((lhs, q_lhs, lhs_scale), (rhs, q_rhs, rhs_scale))
  return out, (*sides, (out_grad_scale, out_grad_amax_history))


def quantized_dot_bwd(dimension_numbers, preferred_element_type, res, g):
  (lhs, q_lhs, lhs_scale), (rhs, q_rhs, rhs_scale), g_meta = res
  g_scale, g_history = g_meta
  new_g_scale, new_g_history = update_fp8_meta(
    g, jnp.float8_e5m2, g_scale, g_history
  )
  g_scale_now = _physical(new_g_scale)
  q_g = quantize(g, jnp.float8_e5m2, g_scale_now, preferred_element_type)
  transpose = dict(
    dimension_numbers=dimension_numbers,
    precision=lax.Precision.HIGHEST,
    preferred_element_type=preferred_element_type,
  )
  d_lhs = dequantize(
    dot_general_transpose_lhs(q_g, lhs, q_rhs, **transpose),
    preferred_element_type,
    rhs_scale * g_scale_now,
  )
  d_rhs = dequantize(
    dot_general_transpose_rhs(q_g, q_lhs, rhs, **transpose),
    preferred_element_type,
    lhs_scale * g_scale_now,
  )
  return d_lhs, None, None, d_rhs, None, None, new_g_scale, new_g_history


quantized_dot.defvjp(quantized_dot_fwd, quantized_dot_bwd)


_SCALED_DOT_STATE = (
  'lhs_scale',
  'rhs_scale',
  'grad_scale',
  'lhs_amax_history',
  'rhs_amax_history',
  'grad_amax_history',
)


def fp8_scaled_dot_general(
  lhs: Array,
  rhs: Array,
  dimension_numbers,
  precision=None,
  preferred_element_type=None,
  *,
  lhs_scale: Array | None = None,
  rhs_scale: Array | None = None,
  grad_scale: Array | None = None,
  lhs_amax_history: Array | None = None,
  rhs_amax_history: Array | None = None,
  grad_amax_history: Array | None = None,
  quantize_compute_type=jnp.float32,
):
  """A ``dot_general`` computed as an FP8 dot with delayed scaling.

  Both operands are quantized to ``float8_e4m3fn`` (``in_q``), multiplied
  in FP8 (``quantized_dot``) and the product is dequantized to
  ``preferred_element_type`` (``out_dq``). Usable as ``jnp.einsum``'s
  ``_dot_general`` once the six state arrays are bound.

  Args:
    lhs, rhs, dimension_numbers: as for ``lax.dot_general``.
    precision: not used (a warning says so when given): FP8 dots run at
      the default precision.
    preferred_element_type: dtype of the product (``None``: the FP8 dtype
      of the dot, dequantized to float32).
    lhs_scale, rhs_scale, grad_scale: the delayed scales, shape ``(1,)``.
    lhs_amax_history, rhs_amax_history, grad_amax_history: the histories.
    quantize_compute_type: dtype the operands are scaled in.

  Returns:
    The product, in ``preferred_element_type``.

  >>> import jax.numpy as jnp
  >>> state = dict(lhs_scale=jnp.ones((1,)), rhs_scale=jnp.ones((1,)),
  ...   grad_scale=jnp.ones((1,)), lhs_amax_history=jnp.zeros((4,)),
  ...   rhs_amax_history=jnp.zeros((4,)), grad_amax_history=jnp.zeros((4,)))
  >>> fp8_scaled_dot_general(jnp.ones((2, 3)), jnp.ones((3, 2)),
  ...   (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32, **state)
  Array([[3., 3.],
         [3., 3.]], dtype=float32)
  """
  given = locals()
  missing = [name for name in _SCALED_DOT_STATE if given[name] is None]
  if missing:
    raise TypeError(
      'fp8_scaled_dot_general needs its FP8 state as keyword arguments; '
      f'missing: {", ".join(missing)}.'
    )
  if precision is not None:
    _warn_ignored(
      'The function fp8_scaled_dot_general',
      'will set the "precision" and disregard any provided "precision" '
      'argument.',
    )
  e4m3 = jnp.float8_e4m3fn
  q_lhs, lhs_scale = in_q(
    quantize_compute_type, e4m3, lhs, lhs_scale, lhs_amax_history
  )
  q_rhs, rhs_scale = in_q(
    quantize_compute_type, e4m3, rhs, rhs_scale, rhs_amax_history
  )
  sides = (lhs, q_lhs, lhs_scale), (rhs, q_rhs, rhs_scale)
  grad_meta = (grad_scale, grad_amax_history)
  out = quantized_dot(
    *sides[0], *sides[1], *grad_meta, dimension_numbers, preferred_element_type
  )
  return out_dq(preferred_element_type, lhs_scale, rhs_scale, out)
