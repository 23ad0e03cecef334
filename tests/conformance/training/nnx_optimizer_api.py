"""nnx.Optimizer API: state Variable types, update's return value, graph=
with shared Variables, missing wrt, ModelAndOptimizer, to_opt_state."""

import jax
import jax.numpy as jnp
import optax
import report
from flax import nnx
from flax.nnx.training.optimizer import to_opt_state


class Shared(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = self.a
    self.c = nnx.Param(jnp.zeros(1))


def is_var(x):
  return isinstance(x, nnx.Variable)


model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
opt = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
kinds = jax.tree.map(
  lambda v: type(v).__name__, nnx.state(opt.opt_state), is_leaf=is_var
)
report.value('state kinds', kinds.to_pure_dict())
report.value('mu container', type(opt.opt_state[0].mu).__name__)
report.value('graph attribute', opt.graph)
updates = opt.update(model, jax.tree.map(jnp.ones_like, nnx.state(model)))
report.tree('updates', updates)

shared = Shared()
opt = nnx.Optimizer(shared, optax.sgd(0.1, momentum=0.9), wrt=nnx.Param)
report.value('shared trace keys', sorted(nnx.state(opt.opt_state)[0]['trace']))
opt.update(shared, jax.tree.map(jnp.ones_like, nnx.state(shared, nnx.Param)))
report.array('shared a', shared.a[...])
report.array('shared b', shared.b[...])
with report.raises('tree mode with shared Variables'):
  nnx.Optimizer(shared, optax.sgd(0.1), wrt=nnx.Param, graph=False)
with report.raises('missing wrt'):
  nnx.Optimizer(shared, optax.sgd(0.1))

state = nnx.ModelAndOptimizer(
  nnx.Linear(2, 1, rngs=nnx.Rngs(0)), optax.sgd(1.0)
)
report.value('model and optimizer wrt', state.wrt.__name__)
state.update(jax.tree.map(jnp.ones_like, nnx.state(state.model, nnx.Param)))
report.tree('model and optimizer params', nnx.state(state.model))
opt_state = to_opt_state({'count': jnp.zeros(()), 'mu': nnx.Param(jnp.ones(2))})
report.value(
  'to_opt_state', {k: type(v).__name__ for k, v in opt_state.items()}
)
