"""The fp8 meta dtype (fm32): names, conversions, rules, fm32 state in the ops."""

import jax
import jax.numpy as jnp
import report
from jax import lax
from flax.linen import fp8_ops as f

report.text('fm32', repr(f.fm32))
report.value('equal', f.fm32 == f.fp32_max_grad)
report.text('bf16-name', f.fp8_meta_dtype_wrapper(jnp.bfloat16).name)
report.value(
  'extended', bool(jax.dtypes.issubdtype(f.fm32, jax.dtypes.extended))
)
meta = lax.convert_element_type(jnp.array([1.0, 2.0]), f.fm32)
report.text('meta-dtype', str(meta.dtype))
report.array('round-trip', lax.convert_element_type(meta, jnp.float32))
with report.raises('int-to-meta'):
  lax.convert_element_type(jnp.array([1, 2]), f.fm32)
rules = f.Fp8MetaTyRules
report.array(
  'add',
  lax.convert_element_type(
    rules.add(f.fm32, jnp.array([1.0, 5.0]), jnp.array([3.0, 2.0])), jnp.float32
  ),
)
report.array('zero', lax.convert_element_type(rules.zero(f.fm32), jnp.float32))
report.array(
  'full', lax.convert_element_type(rules.full((2,), 3.0, f.fm32), jnp.float32)
)
report.value(
  'convert',
  [
    rules.convert_from(f.fm32, jnp.float32),
    rules.convert_to(jnp.int32, f.fm32),
  ],
)
x = jnp.array([[0.3, -1.7, 2.5], [10.0, 0.01, -3.3]], jnp.float32)
scale = jax.jit(lambda a: lax.convert_element_type(a, f.fm32))(jnp.array([0.5]))
history = lax.convert_element_type(jnp.array([0.0, 4.0, 2.0, 0.0]), f.fm32)
qx, new_scale, new_history = f.quantize_dequantize_update(
  x, jnp.float8_e4m3fn, scale, history, jnp.float32
)
report.array('fm32-qx', qx)
report.text('fm32-out-dtypes', f'{new_scale.dtype} {new_history.dtype}')
report.array('fm32-scale', lax.convert_element_type(new_scale, jnp.float32))
report.array('fm32-history', lax.convert_element_type(new_history, jnp.float32))


def two_uses(scale, history):
  scale = lax.convert_element_type(scale, f.fm32)
  history = lax.convert_element_type(history, f.fm32)
  first = f.in_qdq(jnp.float32, jnp.float8_e4m3fn, x, scale, history)
  second = f.in_qdq(jnp.float32, jnp.float8_e4m3fn, x * 3, scale, history)
  return jnp.sum(first) + jnp.sum(second)


report.tree(
  'fm32-grads-max',
  jax.jit(jax.grad(two_uses, argnums=(0, 1)))(
    jnp.array([0.5]), jnp.array([0.0, 4.0, 2.0, 0.0])
  ),
)
