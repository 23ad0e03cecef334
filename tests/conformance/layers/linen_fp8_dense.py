"""nn.Dense with dot_general_cls=nn.Fp8DotGeneral: FP8 state tree, outputs, grads."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

x = jax.random.normal(jax.random.key(1), (4, 8))
for label, cls in (
  ('fp8', nn.Fp8DotGeneral),
  ('direct', nn.Fp8DirectDotGeneralOp),
):
  model = nn.Dense(5, dot_general_cls=cls)
  variables = model.init(jax.random.key(0), x)
  report.tree(f'{label}-variables', variables)
  report.array(f'{label}-y', model.apply(variables, x))

  def loss(v, x):
    return jnp.mean(model.apply(v, x) ** 2)

  grads = jax.grad(loss, argnums=(0, 1))(variables, x)
  report.tree(f'{label}-grads', grads)
  # A second call sees the state the first one proposed.
  state = dict(
    variables, _overwrite_with_gradient=grads[0]['_overwrite_with_gradient']
  )
  report.array(f'{label}-y-after', model.apply(state, x * 2))

model = nn.DenseGeneral((2, 3), dot_general_cls=nn.Fp8DotGeneral)
variables = model.init(jax.random.key(0), x)
report.tree('dense-general-variables', variables, values=False)
report.array('dense-general-y', model.apply(variables, x))
report.array(
  'bf16-y',
  nn.Dense(
    5,
    dot_general_cls=nn.Fp8DotGeneral,
    dtype=jnp.bfloat16,
    param_dtype=jnp.bfloat16,
  ).apply(
    jax.tree_util.tree_map(
      lambda a: (
        a.astype(jnp.bfloat16) if a.dtype == jnp.float32 and a.ndim == 2 else a
      ),
      nn.Dense(5, dot_general_cls=nn.Fp8DotGeneral).init(jax.random.key(0), x),
    ),
    x,
  ),
  rtol=1e-2,
  atol=1e-2,
)
with report.raises('dot-general-arity'):
  nn.Fp8DotGeneral().init(jax.random.key(0), x, x.T)
