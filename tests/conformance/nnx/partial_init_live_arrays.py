"""Memory-efficient partial initialization (model surgery): a jitted
function with donate_argnums builds a model, swaps in a LoRALinear and
nnx.update-s it from a donated State; the number of arrays the call leaves
alive, the model it returns, and that temporaries passed to transforms
are freed by reference counting (the cycle collector is off while
counting)."""

import functools
import gc

import jax
import jax.numpy as jnp
import report
from flax import nnx


class TwoLayerMLP(nnx.Module):
  def __init__(self, dim, rngs: nnx.Rngs):
    self.linear1 = nnx.Linear(dim, dim, rngs=rngs)
    self.linear2 = nnx.Linear(dim, dim, rngs=rngs)

  def __call__(self, x):
    return self.linear2(self.linear1(x))


gc.collect()
gc.disable()
old_state = nnx.state(TwoLayerMLP(4, rngs=nnx.Rngs(0)))
simple_model = nnx.eval_shape(lambda: TwoLayerMLP(4, rngs=nnx.Rngs(42)))
start = len(jax.live_arrays())


@functools.partial(nnx.jit, donate_argnums=0)
def partial_init(old_state, rngs):
  model = TwoLayerMLP(4, rngs=rngs)
  model.linear1 = nnx.LoRALinear(4, 4, lora_rank=3, rngs=rngs)
  nnx.update(model, old_state)
  return model


good_model = partial_init(old_state, nnx.Rngs(42))
report.value('new live arrays', len(jax.live_arrays()) - start)
report.value(
  'live array shapes',
  sorted([list(a.shape), str(a.dtype)] for a in jax.live_arrays()),
)
report.tree('model state', nnx.state(good_model))
report.array('model output', good_model(jnp.ones((2, 4))))
report.value(
  'old state deleted', [v.is_deleted() for v in jax.tree.leaves(old_state)]
)
again = len(jax.live_arrays())
good_model = partial_init(old_state, nnx.Rngs(42))
report.value('second call, new live arrays', len(jax.live_arrays()) - again)

for name, fn in [
  ('jit', lambda r: nnx.jit(lambda r: r.default())(r)),
  (
    'jit building a module',
    lambda r: nnx.jit(lambda r: nnx.Linear(2, 2, rngs=r))(r),
  ),
  ('split', nnx.split),
  (
    'eval_shape',
    lambda r: nnx.eval_shape(lambda r: nnx.Linear(2, 2, rngs=r), r),
  ),
]:
  for graph in (True, False):
    with nnx.set_graph_mode(graph):
      fn(nnx.Rngs(1))
      before = len(jax.live_arrays())
      fn(nnx.Rngs(1))
      report.value(f'{name} graph={graph}', len(jax.live_arrays()) - before)
gc.enable()
