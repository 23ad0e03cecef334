"""NNX recurrent layers with bfloat16; modified_orthogonal; SimpleCell's
default dtype."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx.nn import recurrent

report.array(
  'mod-orth',
  recurrent.modified_orthogonal(jax.random.key(3), (4, 2), jnp.bfloat16),
)
x = jnp.linspace(-1, 1, 12).reshape(1, 4, 3).astype(jnp.bfloat16)
cell = nnx.LSTMCell(3, 2, param_dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
report.tree('lstm-bf16-params', nnx.state(cell))
report.array('lstm-bf16', nnx.RNN(cell)(x), rtol=1e-2, atol=1e-2)
gru = nnx.GRUCell(3, 2, dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
report.array('gru-bf16-compute', nnx.RNN(gru)(x), rtol=1e-2, atol=1e-2)
simple = nnx.SimpleCell(3, 2, rngs=nnx.Rngs(0))
report.value('simple-dtype', str(simple.dtype))
report.array('simple', nnx.RNN(simple)(x), rtol=1e-2, atol=1e-2)
opt = nnx.OptimizedLSTMCell(3, 2, rngs=nnx.Rngs(0))
report.tree('opt-state', nnx.state(opt))
