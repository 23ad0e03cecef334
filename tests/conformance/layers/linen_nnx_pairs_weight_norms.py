"""Linen and NNX WeightNorm / SpectralNorm agree on the same parameters."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx

x = jnp.linspace(-1, 1, 6).reshape(2, 3)

# WeightNorm over a dense layer.
lin = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
wn = nnx.WeightNorm(lin, rngs=nnx.Rngs(1))
dense = nn.WeightNorm(nn.Dense(4))
variables = dense.init(jax.random.key(0), x)
variables = jax.tree.map(lambda a: a, variables)
params = variables['params']
params['layer_instance']['kernel'] = lin.kernel[...]
params['layer_instance']['bias'] = lin.bias[...]
report.tree('linen-wn-params', params, values=False)
y_linen = dense.apply({'params': params}, x)
y_nnx = wn(x)
report.array('wn-linen', y_linen)
report.array('wn-nnx', y_nnx)
report.value('wn-agree', bool(jnp.allclose(y_linen, y_nnx, atol=1e-6)))

# SpectralNorm: same kernel and the same starting u.
lin = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
sn = nnx.SpectralNorm(lin, rngs=nnx.Rngs(1))
u0 = sn.batch_stats['kernel', 'u'][...]
dense = nn.SpectralNorm(nn.Dense(4))
variables = dense.init(jax.random.key(0), x, update_stats=False)
report.tree('linen-sn-vars', variables, values=False)
params = dict(variables['params'])
params['layer_instance'] = {'kernel': lin.kernel[...], 'bias': lin.bias[...]}
stats = jax.tree.map(lambda a: a, dict(variables['batch_stats']))
stats['layer_instance/kernel/u'] = u0
y_linen, new_stats = dense.apply(
  {'params': params, 'batch_stats': stats},
  x,
  update_stats=True,
  mutable=['batch_stats'],
)
y_nnx = sn(x)
report.array('sn-linen', y_linen)
report.array('sn-nnx', y_nnx)
report.value('sn-agree', bool(jnp.allclose(y_linen, y_nnx, atol=1e-6)))
report.array(
  'sn-sigma-linen', new_stats['batch_stats']['layer_instance/kernel/sigma']
)
report.array('sn-sigma-nnx', sn.batch_stats['kernel', 'sigma'][...])
