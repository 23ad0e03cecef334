"""nnx.BatchNorm under autodiff: the running statistics update is not
differentiated (hijax BatchStats update under jax.grad), the output is."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

x = jnp.arange(6.0).reshape(2, 3)
graphdef, state = nnx.split(nnx.BatchNorm(3, momentum=0.8, rngs=nnx.Rngs(0)))


def new_stats(old_mean, x):
  fresh = jax.tree.map(lambda a: a, state)
  fresh['mean'][...] = old_mean
  layer = nnx.merge(graphdef, fresh)
  y = layer(x)
  return (
    layer.mean[...],
    layer.var[...],
    (y * jnp.arange(6.0).reshape(2, 3)).sum(),
  )


jac = jax.jacobian(new_stats, argnums=(0, 1))(jnp.ones(3), x)
report.array('dmean-dold', jac[0][0])
report.array('dmean-dx', jac[0][1])
report.array('dvar-dx', jac[1][1])
report.array('dy-dx', jac[2][1], atol=1e-4)
report.tree('stats', new_stats(jnp.ones(3), x)[:2])

for hijax in (True, False):
  with nnx.var_defaults(hijax=hijax):
    model = nnx.Sequential(
      nnx.Linear(2, 3, rngs=nnx.Rngs(0)),
      nnx.BatchNorm(3, rngs=nnx.Rngs(0)),
    )
  data = jnp.arange(8.0).reshape(4, 2)

  @jax.jit
  def step(data):
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)

    def loss(params):
      return (nnx.merge(graphdef, params, rest)(data) ** 3).mean()

    return jax.value_and_grad(loss)(nnx.with_vars(params, hijax=False))

  if hijax:
    loss, grads = step(data)
    report.array('hijax-loss', loss)
    report.tree('hijax-grads', nnx.to_pure_dict(grads))
    report.tree(
      'hijax-stats', nnx.to_pure_dict(nnx.state(model, nnx.BatchStat))
    )
  else:
    with report.raises('plain-captured'):
      step(data)
