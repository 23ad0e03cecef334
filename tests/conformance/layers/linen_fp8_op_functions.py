"""flax.linen.fp8_ops functions on fixed inputs: values, dtypes, gradients."""

import jax
import jax.numpy as jnp
import report
from jax import lax
from flax.linen import fp8_ops as f

E4M3, E5M2 = jnp.float8_e4m3fn, jnp.float8_e5m2
x = jnp.array([[0.3, -1.7, 2.5], [10.0, 0.01, -3.3]], jnp.float32)
k = jnp.array([[0.5, -0.25], [1.5, 2.0], [-0.75, 3.0]], jnp.float32)
g = jnp.array([[1.0, -2.0], [0.5, 3.0]])
dn = (((1,), (0,)), ((), ()))
s1, s2, s3 = jnp.array([0.5]), jnp.array([0.25]), jnp.array([0.125])
h1 = jnp.array([0.0, 4.0, 2.0, 0.0])
h2 = jnp.array([1.0, 2.0, 3.0, 6.0])
h3 = jnp.array([0.5, 0.0, 0.0, 0.0])

for d in (E4M3, E5M2, jnp.float8_e4m3fnuz, jnp.float8_e5m2fnuz):
  report.value(f'max {jnp.dtype(d).name}', float(f.get_fp8_max(d, jnp.float32)))
with report.raises('max-non-fp8'):
  f.get_fp8_max(jnp.float16, jnp.float32)
report.array(
  'quantize',
  f.quantize(x, E5M2, jnp.array([0.02]), jnp.float32).astype(jnp.float32),
)
report.value(
  'quantize-dtype',
  str(f.quantize(x, E5M2, jnp.array([0.02]), jnp.float32).dtype),
)
report.array(
  'dequantize', f.dequantize(x.astype(E4M3), jnp.bfloat16, jnp.array([0.02]))
)
report.array('qdq', f.qdq(x, E4M3, jnp.array([0.02]), jnp.float32))
report.array(
  'qdq-bf16',
  f.qdq(x.astype(jnp.bfloat16), E4M3, jnp.array([0.02]), jnp.float32),
)
report.array(
  'compute-scale', f.compute_scale(jnp.float32(4.0), s1, 448.0, margin=1)
)
for bad in (0.0, float('inf'), float('nan')):
  report.array(
    f'compute-scale-{bad}',
    f.compute_scale(jnp.float32(bad), jnp.array([0.3]), 448.0),
  )
report.array('amax-history', f.compute_amax_history(x, h1))
report.tree('update', f.update_fp8_meta(x, E4M3, s1, h1))
report.tree('qdu', f.quantize_dequantize_update(x, E4M3, s1, h1, jnp.float32))
report.tree('in_qdq_fwd', f.in_qdq_fwd(jnp.float32, E4M3, x, s1, h1))
report.tree('out_qdq_bwd', f.out_qdq_bwd(jnp.float32, E5M2, (s1, h1), x))
q, scale = f.in_q(jnp.float32, E4M3, x, s1, h1)
report.array('in_q', q.astype(jnp.float32))
report.array('in_q-scale', scale)
report.array('out_dq', f.out_dq(jnp.float32, s1, s2, x))
report.tree(
  'grads in_qdq/out_qdq',
  jax.grad(
    lambda x, s, h: jnp.sum(
      f.out_qdq(
        jnp.float32, E5M2, f.in_qdq(jnp.float32, E4M3, x, s, h) * 3, s, h
      )
    ),
    argnums=(0, 1, 2),
  )(x, s1, h1),
)
qx, qk = x.astype(E4M3), k.astype(E4M3)
report.array(
  'quantized_dot',
  f.quantized_dot(x, qx, s1, k, qk, s2, s3, h3, dn, jnp.float32),
)
res = f.quantized_dot_fwd(x, qx, s1, k, qk, s2, s3, h3, dn, jnp.float32)[1]
grads = f.quantized_dot_bwd(dn, jnp.float32, res, g * 1e-4)
report.tree('quantized_dot_bwd', [a for a in grads if a is not None])
kw = dict(dimension_numbers=dn, precision=None, preferred_element_type=None)
report.array('transpose-lhs', f.dot_general_transpose_lhs(g, x, k, **kw))
report.array('transpose-rhs', f.dot_general_transpose_rhs(g, x, k, **kw))
state = dict(
  lhs_scale=s1,
  rhs_scale=s2,
  grad_scale=s3,
  lhs_amax_history=h1,
  rhs_amax_history=h2,
  grad_amax_history=h3,
)


def scaled(x, k, state, pet):
  return f.fp8_scaled_dot_general(x, k, dn, preferred_element_type=pet, **state)


for pet in (jnp.float32, jnp.bfloat16):
  name = jnp.dtype(pet).name
  report.array(f'scaled-{name}', scaled(x, k, state, pet), rtol=1e-2, atol=1e-2)
  report.tree(
    f'scaled-grads-{name}',
    jax.grad(
      lambda x, k, st: jnp.sum(scaled(x, k, st, pet).astype(jnp.float32) * g),
      argnums=(0, 1, 2),
    )(x, k, state),
    values=pet == jnp.float32,
  )
report.array('dgwp', f.dot_general_with_precision(x, k, dn))
report.tree(
  'dgwp-jvp',
  f.dot_general_with_precision_jvp(dn, None, None, (x, k), (x * 2, k * 3)),
)
with report.warns('dgwp-ignores'):
  f.dot_general_with_precision(x, k, dn, lax.Precision.HIGHEST)
with report.warns('scaled-ignores-precision'):
  f.fp8_scaled_dot_general(
    x, k, dn, lax.Precision.HIGHEST, jnp.float32, **state
  )
