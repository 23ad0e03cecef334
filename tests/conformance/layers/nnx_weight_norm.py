"""nnx.WeightNorm: scales, normalized kernels, feature_axes, use_scale,
variable_filter, dtypes, Conv and MHA, grad and jit."""

import jax.numpy as jnp
import report
from flax import nnx


def make(**kwargs):
  lin = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
  return lin, nnx.WeightNorm(lin, rngs=nnx.Rngs(1), **kwargs)


rngs = nnx.Rngs(1)
lin = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
wn = nnx.WeightNorm(lin, rngs=rngs)
report.value('rng-count', int(rngs.params.count[...]))
report.tree('state', nnx.state(wn))
report.value('attrs', [k for k in vars(wn) if not k.startswith('_')])
report.array('y', wn(jnp.eye(3)))
report.array('kernel', lin.kernel[...])
report.array('y-again', wn(jnp.eye(3)))

x = jnp.ones((1, 3))
for name, kwargs in [
  ('eps', dict(epsilon=10.0)),
  ('axes-none', dict(feature_axes=None)),
  ('axes-0', dict(feature_axes=0)),
  ('axes-01', dict(feature_axes=(0, 1))),
  ('no-scale', dict(use_scale=False)),
  ('all-params', dict(variable_filter=nnx.Param)),
  ('bias-only', dict(variable_filter=nnx.PathContains('bias'))),
]:
  lin, wn = make(**kwargs)
  report.value(
    f'{name}-scales',
    None
    if wn.scales is None
    else {'/'.join(k): list(v.shape) for k, v in wn.scales.items()},
  )
  report.array(f'{name}-y', wn(x))
  report.tree(f'{name}-layer', nnx.state(lin))

lin, wn = make(dtype=jnp.bfloat16, param_dtype=jnp.float16)
report.array('half-y', wn(x))
report.tree('half-layer', nnx.state(lin))
with report.raises('random-scale-init'):
  make(scale_init=nnx.initializers.normal())

conv = nnx.Conv(2, 4, (3, 3), rngs=nnx.Rngs(0))
wn = nnx.WeightNorm(conv, rngs=nnx.Rngs(1))
report.array('conv-y', wn(jnp.ones((1, 4, 4, 2))))
mha = nnx.MultiHeadAttention(
  2, 4, qkv_features=4, decode=False, rngs=nnx.Rngs(0)
)
wn = nnx.WeightNorm(mha, rngs=nnx.Rngs(1))
report.value(
  'mha-scales', {'/'.join(k): list(v.shape) for k, v in wn.scales.items()}
)
report.array('mha-y', wn(jnp.ones((1, 3, 4))), rtol=1e-4, atol=1e-5)

_, wn = make()
grads = nnx.grad(lambda m: m(jnp.ones((2, 3))).sum())(wn)
report.tree('grads', grads, rtol=1e-4, atol=1e-5)
report.array('jit-y', nnx.jit(lambda m, x: m(x))(wn, x))
