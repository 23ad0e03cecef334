"""nnx.MultiHeadAttention: normalize_qk with scale metadata and the
promote_dtype arguments."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx.nn import dtypes


def to_f32(args, /, *, dtype=None, inexact=True):
  print('promote', len(args), dtype)
  return dtypes.promote_dtype(args, dtype=jnp.float32, inexact=inexact)


# Sharding metadata places the scale eagerly, which needs a mesh.
with jax.set_mesh(jax.make_mesh((1,), ('h',))):
  m = nnx.MultiHeadAttention(
    2,
    4,
    normalize_qk=True,
    decode=False,
    qkv_promote_dtype=to_f32,
    query_ln_scale_metadata={'sharding_names': ('h',)},
    rngs=nnx.Rngs(0),
  )
report.tree('params', nnx.state(m, nnx.Param))
report.value(
  'ln-metadata', m.query_ln.scale.get_metadata().get('sharding_names')
)
x = jnp.linspace(-1, 1, 8).reshape(1, 2, 4).astype(jnp.bfloat16)
with report.printed('promote-calls'):
  report.array('out', m(x), rtol=1e-2, atol=1e-2)
