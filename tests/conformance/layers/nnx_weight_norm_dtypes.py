"""nnx.WeightNorm and Linen WeightNorm over Linear / Conv layers in half
precision (dtype / param_dtype / feature_axes configurations): outputs of
both APIs on the same parameters."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx

x = jax.random.normal(jax.random.key(1), (4, 32)) * 4
for dtype in (jnp.float32, jnp.float16, jnp.bfloat16):
  for param_dtype in (jnp.float32, jnp.float16):
    for fa in (-1, None):
      label = f'{jnp.dtype(dtype).name}-{jnp.dtype(param_dtype).name}-{fa}'
      lin = nnx.Linear(
        32, 16, dtype=dtype, param_dtype=param_dtype, rngs=nnx.Rngs(0)
      )
      m = nnx.WeightNorm(
        lin,
        feature_axes=fa,
        dtype=dtype,
        param_dtype=param_dtype,
        rngs=nnx.Rngs(1),
      )
      lm = nn.WeightNorm(
        nn.Dense(16, dtype=dtype, param_dtype=param_dtype),
        feature_axes=fa,
        dtype=dtype,
        param_dtype=param_dtype,
      )
      variables = jax.tree.map(lambda a: a, lm.init(jax.random.key(0), x))
      variables['params']['layer_instance'] = {
        'kernel': lin.kernel[...],
        'bias': lin.bias[...],
      }
      report.array(f'nnx-{label}', m(x))
      report.array(f'linen-{label}', lm.apply(variables, x))

x = jax.random.normal(jax.random.key(1), (2, 9, 9, 8)) * 3
for dtype in (jnp.float16, jnp.bfloat16):
  conv = nnx.Conv(
    8, 16, kernel_size=(3, 3), dtype=dtype, param_dtype=dtype, rngs=nnx.Rngs(0)
  )
  m = nnx.WeightNorm(conv, dtype=dtype, param_dtype=dtype, rngs=nnx.Rngs(1))
  report.array(f'conv-{jnp.dtype(dtype).name}', m(x))
