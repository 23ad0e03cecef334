"""NNX layers and patched JAX functions.

``nnx.LinearGeneral``, ``MultiHeadAttention``'s projections,
``ConvTranspose``, ``Embed.attend`` and the attention einsums look their
JAX function up when they run: a patched one sees every call (concrete
arrays eagerly, tracers under ``nnx.jit`` / ``jax.jit``) with the layer's
keywords, and can add Variables to the layer. ``nnx.Linear``, ``nnx.Conv``
and ``nnx.Einsum`` keep the function they were given, ``jax.lax.dot_general``
/ ``conv_general_dilated`` / ``jnp.einsum`` as they were when ``flax.nnx``
was imported, so patching those reaches them only through the arguments.
"""

import contextlib

import jax
import jax.numpy as jnp
import report
from flax import nnx

ORIGINAL = {
  'dot_general': jax.lax.dot_general,
  'conv_general_dilated': jax.lax.conv_general_dilated,
  'einsum': jnp.einsum,
}


def kind(x):
  return 'tracer' if isinstance(x, jax.core.Tracer) else type(x).__name__


@contextlib.contextmanager
def patched(module, name, calls, scale=1.0):
  orig = getattr(module, name)

  def fake(*args, **kwargs):
    operands = [a for a in args if hasattr(a, 'shape')][:2]
    calls.append([[kind(a) for a in operands], sorted(kwargs)])
    if name == 'einsum':
      args = (args[0], args[1], args[2] * scale) + args[3:]
    else:
      args = (args[0], args[1] * scale) + args[2:]
    return orig(*args, **kwargs)

  setattr(module, name, fake)
  try:
    yield
  finally:
    setattr(module, name, orig)


rngs = lambda: nnx.Rngs(0)  # noqa: E731

# The defaults of Linear / Conv / Einsum are the functions of import time,
# even for a layer class first used (here) while they are patched.
with patched(jax.lax, 'dot_general', []), patched(jnp, 'einsum', []):
  with patched(jax.lax, 'conv_general_dilated', []):
    report.value(
      'defaults are the original functions',
      [
        nnx.Linear(2, 2, rngs=rngs()).dot_general is ORIGINAL['dot_general'],
        nnx.Conv(2, 2, 1, rngs=rngs()).conv_general_dilated
        is ORIGINAL['conv_general_dilated'],
        nnx.Einsum('ab,bc->ac', (2, 2), rngs=rngs()).einsum_op
        is ORIGINAL['einsum'],
      ],
    )


x2 = jnp.linspace(-1.0, 1.0, 8).reshape(2, 4)
x3 = jnp.linspace(-1.0, 1.0, 20).reshape(1, 5, 4)
q = jnp.linspace(0.0, 1.0, 16).reshape(1, 2, 2, 4)


def jax_jit_call(layer, method, x):
  graphdef, state = nnx.split(layer)

  @jax.jit
  def f(state, x):
    return getattr(nnx.merge(graphdef, state), method)(x)

  return f(state, x)


cases = [
  (
    'Linear',
    jax.lax,
    'dot_general',
    nnx.Linear(4, 3, rngs=rngs()),
    x2,
    '__call__',
  ),
  (
    'LinearGeneral',
    jax.lax,
    'dot_general',
    nnx.LinearGeneral(4, (3, 2), rngs=rngs()),
    x2,
    '__call__',
  ),
  (
    'Einsum',
    jnp,
    'einsum',
    nnx.Einsum('ab,bc->ac', (4, 3), rngs=rngs()),
    x2,
    '__call__',
  ),
  (
    'Conv',
    jax.lax,
    'conv_general_dilated',
    nnx.Conv(4, 3, (3,), rngs=rngs()),
    x3,
    '__call__',
  ),
  (
    'ConvTranspose',
    jax.lax,
    'conv_transpose',
    nnx.ConvTranspose(4, 3, (2,), rngs=rngs()),
    x3,
    '__call__',
  ),
  ('Embed.attend', jnp, 'dot', nnx.Embed(5, 4, rngs=rngs()), x2, 'attend'),
  (
    'MultiHeadAttention',
    jax.lax,
    'dot_general',
    nnx.MultiHeadAttention(2, 4, decode=False, rngs=rngs()),
    x3,
    '__call__',
  ),
]
for label, module, name, layer, x, method in cases:
  calls = []
  with patched(module, name, calls, scale=2.0):
    eager = getattr(layer, method)(x)
    jitted = nnx.jit(lambda m, x: getattr(m, method)(x))
    in_nnx_jit = jitted(layer, x)
    jitted(layer, x + 1.0)
    in_jax_jit = jax_jit_call(layer, method, x)
  report.value(f'{label}: calls', calls)
  report.array(f'{label}: eager', eager)
  report.array(f'{label}: nnx.jit', in_nnx_jit)
  report.array(f'{label}: jax.jit', in_jax_jit)
  report.array(f'{label}: unpatched', getattr(layer, method)(x))

for label, kwargs in (
  ('dropout', dict(dropout_rate=0.5, dropout_rng=jax.random.key(3))),
  ('module', dict(module=nnx.Module())),
):
  calls = []
  with patched(jnp, 'einsum', calls):
    out = nnx.dot_product_attention(q, q, q, **kwargs)
  report.value(f'dot_product_attention {label}: calls', calls)
  report.array(f'dot_product_attention {label}', out)


# A patched dot_general that adds a Variable to the layer being run.
class Scale(nnx.Variable):
  pass


current = []


def scaled_dot(lhs, rhs, dims, *args, **kwargs):
  layer = current[-1]
  if not hasattr(layer, 'qscale'):
    layer.qscale = Scale(jnp.full((), 0.5))
  print('scaled_dot', kind(lhs), kind(rhs), sorted(kwargs))
  return ORIGINAL['dot_general'](
    lhs, rhs * layer.qscale[...], dims, *args, **kwargs
  )


def call(layer, x):
  current.append(layer)
  return layer(x)


eager_layer = nnx.LinearGeneral(4, 3, rngs=rngs())
jit_layer = nnx.LinearGeneral(4, 3, rngs=rngs())
with report.printed('variable from the patched function'):
  jax.lax.dot_general = scaled_dot
  try:
    eager = call(eager_layer, x2)
    in_jit = nnx.jit(call)(jit_layer, x2)
    again = nnx.jit(call)(jit_layer, x2)
  finally:
    jax.lax.dot_general = ORIGINAL['dot_general']
report.array('new variable: eager', eager)
report.array('new variable: nnx.jit', in_jit)
report.array('new variable: nnx.jit again', again)
report.tree('new variable: eager state', nnx.state(eager_layer))
report.tree('new variable: jit state', nnx.state(jit_layer))
