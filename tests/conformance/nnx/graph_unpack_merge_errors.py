"""nnx.unpack GraphStates and nnx.prefix results: attribute access, pytree
paths, optimizer updates from their gradients; nnx.merge argument errors."""

import jax
import jax.numpy as jnp
import optax
import report
from flax import nnx

m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
opt = nnx.Optimizer(m, optax.sgd(0.1), wrt=nnx.Param)
params, rest = nnx.unpack(m, nnx.Param, ...)
report.value('GraphState attribute', list(params.kernel.shape))
report.value(
  'GraphState pytree paths',
  [
    jax.tree_util.keystr(p)
    for p, _ in jax.tree_util.tree_flatten_with_path(nnx.unpack(m))[0]
  ],
)
report.value(
  'State pytree paths',
  [
    jax.tree_util.keystr(p)
    for p, _ in jax.tree_util.tree_flatten_with_path(nnx.state(m))[0]
  ],
)
doubled = jax.tree.map(lambda x: 2 * x, params)
report.value('tree.map keeps GraphState', type(doubled).__name__)
report.array('tree.map values', doubled.kernel[...])
grads = nnx.grad(
  lambda p, r: nnx.merge(p, r)(jnp.ones((1, 2))).sum(), graph=False
)(params, rest)
report.value('grads type', type(grads).__name__)
opt.update(m, grads)
report.array('kernel after update', m.kernel[...])
report.value(
  'merge(GraphState, GraphState)', type(nnx.merge(params, rest)).__name__
)

report.value(
  'prefix attribute', nnx.prefix(m, {nnx.Param: 0}, graph=False).kernel
)
with report.raises('prefix without matching filter'):
  nnx.prefix(m, {nnx.BatchStat: 0}, graph=False)

other = nnx.unpack(nnx.Linear(2, 4, rngs=nnx.Rngs(0)))
with report.raises('merge GraphStates of different graphs'):
  nnx.merge(params, other)
with report.raises('merge GraphState with a State'):
  nnx.merge(nnx.unpack(m), nnx.state(m))
graphdef, state = nnx.split(m)
with report.raises('merge(graphdef) without state'):
  nnx.merge(graphdef)
with report.raises('merge(graphdef) without state, no leaves'):
  nnx.merge(nnx.graphdef(nnx.Module()))
with report.raises('merge(state) without graphdef'):
  nnx.merge(state)
with report.raises('merge with a missing key'):
  nnx.merge(graphdef, nnx.State({'kernel': state['kernel']}))
with report.raises('merge with an extra key'):
  nnx.merge(
    graphdef,
    nnx.State(
      {'kernel': state['kernel'], 'bias': state['bias'], 'x': state['bias']}
    ),
  )
