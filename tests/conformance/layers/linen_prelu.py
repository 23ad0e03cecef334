"""nn.PReLU parameters and outputs (float32, bfloat16)."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

x = jnp.linspace(-2, 2, 5)
layer = nn.PReLU(negative_slope_init=0.2)
v = layer.init(jax.random.key(0), x)
report.tree('params', v)
report.array('f32', layer.apply(v, x))
report.array('bf16', layer.apply(v, x.astype(jnp.bfloat16)))
report.array(
  'half-param',
  nn.PReLU(param_dtype=jnp.float16).init(jax.random.key(0), x)['params'][
    'negative_slope'
  ],
)
