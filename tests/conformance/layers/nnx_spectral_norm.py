"""nnx.SpectralNorm: batch_stats tree, power iteration, update_stats, the
wrapped layer's kernel, options, dtypes, grad and jit."""

import jax.numpy as jnp
import report
from flax import nnx


def make(**kwargs):
  lin = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
  return lin, nnx.SpectralNorm(lin, rngs=nnx.Rngs(1), **kwargs)


lin, sn = make()
report.tree('state', nnx.state(sn))
report.value('stat-keys', [list(k) for k in sn.batch_stats])
report.value('attrs', [k for k in vars(sn) if not k.startswith('_')])
report.array('y1', sn(jnp.eye(3)))
report.tree('stats-1', nnx.state(sn, nnx.BatchStat))
report.array('kernel-1', lin.kernel[...])
report.array('y2-frozen', sn(jnp.eye(3), update_stats=False))
report.tree('stats-2', nnx.state(sn, nnx.BatchStat))
report.array('y3', sn(jnp.eye(3)))
report.tree('stats-3', nnx.state(sn, nnx.BatchStat))

_, sn = make(n_steps=0)
report.value('n0-stats', len(sn.batch_stats))
report.array('n0-y', sn(jnp.ones((1, 3))))
_, sn = make(update_stats=False)
report.value('frozen-attr', sn.use_running_average)
report.array('frozen-y', sn(jnp.ones((1, 3))))
_, sn = make(dtype=jnp.bfloat16, param_dtype=jnp.float16)
report.tree('half-stats', nnx.state(sn, nnx.BatchStat))
report.array('half-y', sn(jnp.ones((1, 3))))

conv = nnx.Conv(2, 4, (3, 3), rngs=nnx.Rngs(0))
with report.raises('non-matrix'):
  nnx.SpectralNorm(conv, error_on_non_matrix=True, rngs=nnx.Rngs(1))
sn = nnx.SpectralNorm(conv, n_steps=3, rngs=nnx.Rngs(1))
report.array('conv-y', sn(jnp.ones((1, 5, 5, 2))), rtol=1e-4, atol=1e-5)
report.tree('conv-stats', nnx.state(sn, nnx.BatchStat), rtol=1e-4)

mha = nnx.MultiHeadAttention(
  2, 4, qkv_features=4, decode=False, rngs=nnx.Rngs(0)
)
sn = nnx.SpectralNorm(mha, rngs=nnx.Rngs(1))
report.value('mha-keys', [list(k) for k in sn.batch_stats])
report.tree('mha-stats', nnx.state(sn, nnx.BatchStat))

_, sn = make()
grads = nnx.grad(lambda m: m(jnp.ones((2, 3))).sum())(sn)
report.tree('grads', grads, rtol=1e-4, atol=1e-5)
_, sn = make()
report.array('jit-y', nnx.jit(lambda m, x: m(x))(sn, jnp.ones((1, 3))))
report.tree('jit-stats', nnx.state(sn, nnx.BatchStat))
