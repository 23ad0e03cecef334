"""NANOOFp8DotGeneralOp and the deprecated Fp8DotGeneralOp (fake-quantized FP8)."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

x = jax.random.normal(jax.random.key(1), (4, 8)) * 3
for label, cls in (
  ('nanoo', nn.NANOOFp8DotGeneralOp),
  ('deprecated', nn.Fp8DotGeneralOp),
):
  with report.warns(f'{label}-construct'):
    model = nn.Dense(5, dot_general_cls=cls)
    variables = model.init(jax.random.key(0), x)
  report.tree(f'{label}-variables', variables, values=False)
  report.text(f'{label}-repr', repr(cls(amax_history_length=16)))

  def loss(v, x):
    return jnp.sum(jnp.tanh(model.apply(v, x)))

  state = variables
  for i in range(3):
    grads = jax.grad(loss)(state, x * (i + 1))
    state = dict(
      params=state['params'],
      _overwrite_with_gradient=grads['_overwrite_with_gradient'],
    )
  report.tree(
    f'{label}-state-head',
    jax.tree_util.tree_map(lambda a: a[:4], state['_overwrite_with_gradient']),
  )
  report.array(f'{label}-y', model.apply(state, x))
  report.tree(f'{label}-kernel-grad', grads['params'])

custom = nn.Fp8DirectDotGeneralOp(
  amax_history_length=4, e4m3_dtype=jnp.float8_e4m3fnuz
)
dn = (((1,), (0,)), ((), ()))
k = jnp.ones((8, 2)) / 4
v = custom.init(jax.random.key(0), x, k, dn)
report.tree(
  'direct-custom-dtype-grads',
  jax.grad(lambda v: jnp.sum(custom.apply(v, x, k, dn)))(
    jax.tree_util.tree_map(lambda a: a + 1.0, v)
  ),
)
