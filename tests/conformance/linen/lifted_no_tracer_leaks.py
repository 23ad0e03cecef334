"""Lifted transforms keep no traced values alive (jax.check_tracer_leaks)."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

x = jnp.ones((2, 3, 4))


class Carry(nn.Module):
  @nn.compact
  def __call__(self, c, x):
    return nn.Dense(4)(c) + x, c


def scan(**kw):
  return lambda: nn.scan(Carry, in_axes=1, out_axes=1, **kw)()


lifted = {
  'vmap': lambda: nn.vmap(
    nn.Dense, variable_axes={'params': 0}, split_rngs={'params': True}
  )(3),
  'jit': lambda: nn.jit(nn.Dense)(3),
  'remat': lambda: nn.remat(nn.Dense)(3),
  'scan axes': scan(variable_axes={'params': 0}, split_rngs={'params': True}),
  'scan broadcast': scan(
    variable_broadcast='params', split_rngs={'params': False}
  ),
}


class Wrapper(nn.Module):
  kind: str

  @nn.compact
  def __call__(self, x):
    layer = lifted[self.kind]()
    if self.kind.startswith('scan'):
      return layer(jnp.ones((2, 4)), x)
    return layer(x)


for kind in lifted:
  with jax.check_tracer_leaks(True):
    variables = Wrapper(kind).init(jax.random.key(0), x)
    out = Wrapper(kind).apply(variables, x)
  report.tree(f'{kind} variables', variables)
  report.tree(f'{kind} out', out)


class LSTM(nn.Module):
  @nn.compact
  def __call__(self, x):
    carry = nn.LSTMCell(8).initialize_carry(jax.random.key(0), x[:, 0].shape)
    cell = nn.scan(
      nn.LSTMCell,
      variable_broadcast='params',
      split_rngs={'params': False},
      in_axes=1,
      out_axes=1,
    )
    return cell(8, name='ScanLSTM')(carry, x)


with jax.check_tracer_leaks(True):
  table = LSTM().tabulate(
    jax.random.key(0),
    x,
    console_kwargs={'width': 250, 'force_terminal': False, 'no_color': True},
    compute_flops=True,
    compute_vjp_flops=True,
  )
report.text('lstm table rows', '\n'.join(table.splitlines()[:14]))
