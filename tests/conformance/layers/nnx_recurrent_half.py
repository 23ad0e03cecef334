"""NNX recurrent layers on bfloat16 / float16 inputs: output dtypes and
values of every cell through RNN and Bidirectional."""

import jax.numpy as jnp
import report
from flax import nnx

x32 = jnp.linspace(-1, 1, 24).reshape(2, 4, 3)
for dt in (jnp.bfloat16, jnp.float16):
  x = x32.astype(dt)
  tag = jnp.dtype(dt).name
  for name, cls in [
    ('lstm', nnx.LSTMCell),
    ('gru', nnx.GRUCell),
    ('simple', nnx.SimpleCell),
    ('opt', nnx.OptimizedLSTMCell),
  ]:
    # Half-precision params only where the recurrent kernel initializer
    # supports them (LSTMCell's modified_orthogonal).
    half = dict(dtype=dt, param_dtype=dt) if name == 'lstm' else dict(dtype=dt)
    for kind, kwargs in [('f32-params', {}), ('half', half)]:
      cell = cls(3, 2, rngs=nnx.Rngs(0), **kwargs)
      label = f'{tag}-{name}-{kind}'
      # Some combinations change the carry dtype between steps, which the
      # scan refuses: the error class is compared then.
      try:
        y = nnx.RNN(cell)(x)
      except Exception as e:  # noqa: BLE001
        report.value(f'{label}-error', type(e).__name__)
        continue
      report.array(label, y, rtol=2e-2, atol=2e-2)
      carry, y = nnx.RNN(
        cell, return_carry=True, reverse=True, keep_order=True
      )(x, seq_lengths=jnp.array([2, 4]))
      report.tree(f'{label}-carry', carry, rtol=2e-2, atol=2e-2)
  bi = nnx.Bidirectional(
    nnx.RNN(nnx.GRUCell(3, 2, dtype=dt, rngs=nnx.Rngs(0))),
    nnx.RNN(nnx.LSTMCell(3, 2, dtype=dt, rngs=nnx.Rngs(1))),
  )
  report.array(f'{tag}-bidirectional', bi(x), rtol=2e-2, atol=2e-2)
