"""nnx.LoRA keywords to its base module; LoRALinear(out_sharding=)."""

import jax.numpy as jnp
import report
from flax import nnx


def base(x, **kwargs):
  print('base', x.dtype, sorted(kwargs))
  return jnp.ones((x.shape[0], 4), x.dtype)


x = jnp.linspace(-1, 1, 6).reshape(2, 3)
layer = nnx.LoRA(
  3, 2, 4, base_module=base, dtype=jnp.bfloat16, rngs=nnx.Rngs(0)
)
with report.printed('base-call'):
  report.array('lora', layer(x, scale=2), rtol=1e-2, atol=1e-2)
plain = nnx.LoRA(3, 2, 4, b_initializer=nnx.initializers.ones, rngs=nnx.Rngs(1))
report.array('no-base', plain(x, ignored=1))
report.value('attrs', [k for k in vars(plain) if not k.startswith('_')])
ll = nnx.LoRALinear(3, 4, lora_rank=2, rngs=nnx.Rngs(2))
report.array('lora-linear', ll(x, out_sharding=None))
report.tree('lora-linear-state', nnx.state(ll))
