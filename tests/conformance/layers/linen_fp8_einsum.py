"""nn.Fp8Einsum on its own and as MultiHeadDotProductAttention's einsums."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

x = jax.random.normal(jax.random.key(1), (2, 3, 4))
k = jax.random.normal(jax.random.key(2), (4, 5)) / 2
einsum = nn.Fp8Einsum(amax_history_length=8)
variables = einsum.init(jax.random.key(0), '...k,kn->...n', x, k)
report.tree('variables', variables)
for eqn in ('...k,kn->...n', 'bsk,kn->nbs'):
  y = einsum.apply(variables, eqn, x, k)
  report.array(f'y {eqn}', y)

  def loss(v, x, k, eqn=eqn):
    return jnp.sum(jnp.sin(einsum.apply(v, eqn, x, k)))

  report.tree(
    f'grads {eqn}', jax.grad(loss, argnums=(0, 1, 2))(variables, x, k)
  )
report.array(
  'y-bf16-kernel',
  einsum.apply(variables, '...k,kn->...n', x, k.astype(jnp.bfloat16)),
  rtol=1e-2,
  atol=1e-2,
)
report.array(
  'y-preferred-bf16',
  einsum.apply(
    variables, '...k,kn->...n', x, k, preferred_element_type=jnp.bfloat16
  ),
  rtol=1e-2,
  atol=1e-2,
)
with report.warns('precision-ignored'):
  einsum.apply(
    variables, '...k,kn->...n', x, k, precision=jax.lax.Precision.HIGHEST
  )

mha = nn.MultiHeadDotProductAttention(
  num_heads=2,
  qkv_features=8,
  qk_attn_weights_einsum_cls=nn.Fp8Einsum,
  attn_weights_value_einsum_cls=nn.Fp8Einsum,
  qkv_dot_general_cls=nn.Fp8DotGeneral,
)
q = jax.random.normal(jax.random.key(3), (2, 3, 8))
variables = mha.init(jax.random.key(0), q)
report.tree('mha-variables', variables)
report.array('mha-y', mha.apply(variables, q))


def mha_loss(v):
  return jnp.sum(mha.apply(v, q) ** 2)


report.tree(
  'mha-grads-state', jax.grad(mha_loss)(variables)['_overwrite_with_gradient']
)
