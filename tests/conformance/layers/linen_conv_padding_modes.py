"""Linen Conv padding modes (REFLECT, case of strings), canonicalize_padding,
and DenseGeneral over non-trailing axes."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax.linen import linear

x = jnp.arange(2 * 6 * 3, dtype=jnp.float32).reshape(2, 6, 3) / 10
ones = nn.initializers.ones

for padding in ['REFLECT', 'CIRCULAR', 'CAUSAL', 'SAME', 'same', 'valid']:
  for cls in [nn.Conv, nn.ConvLocal, nn.ConvTranspose]:
    label = f'{cls.__name__} {padding}'
    if cls is nn.ConvTranspose and padding in ('REFLECT', 'CAUSAL'):
      with report.raises(label):
        cls(4, (3,), padding=padding, kernel_init=ones).init(
          jax.random.key(0), x
        )
      continue
    y, _ = cls(4, (3,), padding=padding, kernel_init=ones).init_with_output(
      jax.random.key(0), x
    )
    report.array(label, y)

for padding in ['circular', 'foo']:
  with report.raises(f'Conv {padding}'):
    nn.Conv(4, (3,), padding=padding).init(jax.random.key(0), x)

y, _ = nn.Conv(
  4, (3,), strides=2, kernel_dilation=2, padding='REFLECT', kernel_init=ones
).init_with_output(jax.random.key(0), x)
report.array('strided dilated REFLECT', y)
img = jnp.arange(50.0).reshape(1, 5, 5, 2) / 50
y, _ = nn.Conv(4, (3, 3), padding='REFLECT', kernel_init=ones).init_with_output(
  jax.random.key(0), img
)
report.array('2d REFLECT', y)

for padding, rank in [
  ('SAME', 1),
  ('REFLECT', 2),
  ('same', 1),
  (3, 1),
  (3, 2),
  ((1, 2), 2),
  (((1, 2), (3, 4)), 2),
  ([(1, 2)], 1),
  (((1, 2),), 1),
]:
  report.text(
    f'canonicalize_padding {padding!r} {rank}',
    repr(linear.canonicalize_padding(padding, rank)),
  )
with report.raises('canonicalize_padding bad'):
  linear.canonicalize_padding((1, 2), 1)

x4 = jnp.arange(2 * 3 * 4 * 5, dtype=jnp.float32).reshape(2, 3, 4, 5) / 100
for kw in [
  dict(features=(6,), axis=(1,), batch_dims=(0,)),
  dict(features=6, axis=1),
  dict(features=6, axis=-3, batch_dims=(0,)),
  dict(features=(2, 3), axis=(0, 2)),
]:
  m = nn.DenseGeneral(**kw, bias_init=nn.initializers.normal(1.0))
  y, v = m.init_with_output(jax.random.key(0), x4)
  report.tree(f'DenseGeneral {kw} params', v)
  report.array(f'DenseGeneral {kw}', y)
with report.raises('DenseGeneral batch dims not leading'):
  nn.DenseGeneral(6, axis=(0, 2), batch_dims=(1,)).init(jax.random.key(0), x4)
