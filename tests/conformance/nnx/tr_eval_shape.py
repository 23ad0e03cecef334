"""nnx.eval_shape of constructors and calls, graph and tree mode."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class MLP(nnx.Module):
  def __init__(self, din, dout, rngs):
    self.l1 = nnx.Linear(din, 8, rngs=rngs)
    self.bn = nnx.BatchNorm(8, rngs=rngs)
    self.l2 = nnx.Linear(8, dout, rngs=rngs)


def shapes(state):
  return {
    '/'.join(map(str, p)): [list(v.shape), str(v.dtype), type(v).__name__]
    for p, v in nnx.to_flat_state(state)
  }


for graph in (True, False):
  for gu in (True, False):
    a = nnx.eval_shape(
      lambda: MLP(3, 2, nnx.Rngs(0)), graph=graph, graph_updates=gu
    )
    st = nnx.state(a)
    report.value(f'shapes-{graph}-{gu}', shapes(st))
    report.value(f'leaf-{graph}-{gu}', type(a.l1.kernel.get_value()).__name__)

m = MLP(3, 2, nnx.Rngs(0))
out = nnx.eval_shape(lambda m, x: m.l2(m.l1(x)), m, jnp.ones((5, 3)))
report.value('call', [list(out.shape), str(out.dtype)])
out = nnx.eval_shape(
  lambda x, m: m.l1(x), jax.ShapeDtypeStruct((4, 3), jnp.float32), m
)
report.value('call-sds', [list(out.shape), str(out.dtype)])
a = nnx.eval_shape(
  lambda: nnx.Linear(2, 3, param_dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
)
report.value('bf16', shapes(nnx.state(a)))
