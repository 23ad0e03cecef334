"""PReLU dtypes, Embed's default dtype, LinearGeneral's dot_general_cls
(instantiated per call) and FrozenDict batch_axis, GroupNorm feature_axis,
and the names of the flax.nnx.nn module paths."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx.nn import activations, attention, linear, normalization

x = jnp.array([-2.0, 3.0], jnp.bfloat16)
report.array('prelu-bf16', nnx.PReLU()(x))
report.array('prelu-f16', nnx.PReLU(dtype=jnp.float16)(x))
report.array('prelu-int', nnx.PReLU()(jnp.array([-2, 3])))
report.array('prelu-bf16-param', nnx.PReLU(param_dtype=jnp.bfloat16)(x))
with report.raises('prelu-rngs'):
  nnx.PReLU(rngs=nnx.Rngs(0))

for name, kwargs in [
  ('default', {}),
  ('bf16-param', dict(param_dtype=jnp.bfloat16)),
  ('f16-init', dict(embedding_init=lambda k, s, d: jnp.ones(s, jnp.float16))),
  ('bf16-dtype', dict(dtype=jnp.bfloat16)),
]:
  e = nnx.Embed(3, 4, rngs=nnx.Rngs(0), **kwargs)
  report.value(f'embed-{name}-dtype', str(jnp.dtype(e.dtype)))
  report.array(f'embed-{name}-lookup', e(jnp.array([1, 2])))
  report.array(f'embed-{name}-attend', e.attend(jnp.ones((1, 4))))

made = []


class Dot:
  def __init__(self):
    made.append(1)

  def __call__(self, *args, **kwargs):
    return jax.lax.dot_general(*args, **kwargs)


layer = nnx.LinearGeneral(
  2, 3, batch_axis={0: 2}, dot_general_cls=Dot, rngs=nnx.Rngs(0)
)
report.value('lg-made-init', len(made))
report.value('lg-dot-general', layer.dot_general)
report.text('lg-batch-axis', repr(layer.batch_axis))
report.array('lg-y', layer(jnp.ones((2, 2))))
layer(jnp.ones((2, 2)))
report.value('lg-made-calls', len(made))
mha = nnx.MultiHeadAttention(
  2,
  4,
  qkv_dot_general_cls=Dot,
  out_dot_general_cls=Dot,
  decode=False,
  rngs=nnx.Rngs(0),
)
mha(jnp.ones((1, 3, 4)))
report.value('mha-made', len(made))

g = nnx.GroupNorm(4, num_groups=2, rngs=nnx.Rngs(0))
report.value('gn-feature-axis', g.feature_axis)
report.value('gn-has-num-features', hasattr(g, 'num_features'))
report.array('gn-y', g(jnp.arange(16.0).reshape(2, 2, 4)))

for mod in (activations, attention, linear, normalization):
  report.value(
    f'{mod.__name__}-names',
    sorted(
      n
      for n in (
        'Module',
        'PromoteDtypeFn',
        'FrozenDict',
        'dtypes',
        'SpectralNorm',
        'WeightNorm',
      )
      if hasattr(mod, n)
    ),
  )
report.text('initializer', str(nnx.Initializer))
