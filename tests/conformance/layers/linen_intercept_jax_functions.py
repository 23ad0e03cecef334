"""Linen layers call the JAX function they use as it is when they run:
a patched ``jax.lax.dot_general``, ``conv_general_dilated``,
``conv_general_dilated_local``, ``conv_transpose``, ``jnp.einsum`` or
``jnp.dot`` sees every call, with concrete arrays eagerly and tracers under
``jax.jit``, with the layer's keywords; what it returns is the layer's
output. A patched ``dot_general`` can create variables through the module
context (quantization libraries do)."""

import contextlib

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


def kind(x):
  if isinstance(x, jax.core.Tracer):
    return 'tracer'
  if isinstance(x, jax.Array):
    return 'array'
  return repr(x)


@contextlib.contextmanager
def patched(module, name, calls, scale=1.0):
  """Replaces ``module.name`` by a recorder that scales the second operand
  (the first one for ``einsum``, whose first argument is the equation)."""
  orig = getattr(module, name)

  def fake(*args, **kwargs):
    calls.append(
      [[kind(a) for a in args[:2]], sorted(kwargs), kwargs.get('lhs') is None]
    )
    if name == 'einsum':
      args = (args[0], args[1], args[2] * scale) + args[3:]
    elif len(args) > 1:
      args = (args[0], args[1] * scale) + args[2:]
    else:
      kwargs = dict(kwargs, rhs=kwargs['rhs'] * scale)
    return orig(*args, **kwargs)

  setattr(module, name, fake)
  try:
    yield
  finally:
    setattr(module, name, orig)


x2 = jnp.linspace(-1.0, 1.0, 8).reshape(2, 4)
x3 = jnp.linspace(-1.0, 1.0, 20).reshape(1, 5, 4)
ids = jnp.array([[1, 3]])
cases = [
  ('Dense', jax.lax, 'dot_general', nn.Dense(3), x2, None),
  ('DenseGeneral', jax.lax, 'dot_general', nn.DenseGeneral((3, 2)), x2, None),
  ('Einsum', jnp, 'einsum', nn.Einsum((4, 3), 'ab,bc->ac'), x2, None),
  ('Conv', jax.lax, 'conv_general_dilated', nn.Conv(3, (3,)), x3, None),
  (
    'ConvTranspose',
    jax.lax,
    'conv_transpose',
    nn.ConvTranspose(3, (2,)),
    x3,
    None,
  ),
  (
    'ConvLocal',
    jax.lax,
    'conv_general_dilated_local',
    nn.ConvLocal(2, (3,)),
    x3,
    None,
  ),
  ('Embed.attend', jnp, 'dot', nn.Embed(5, 4), x2, 'attend'),
]
for label, module, name, layer, x, method in cases:
  plain = layer.init(jax.random.key(0), x, method=method)
  calls = []
  with patched(module, name, calls, scale=2.0):
    variables = layer.init(jax.random.key(0), x, method=method)
    eager = layer.apply(variables, x, method=method)
    jitted = jax.jit(lambda v, x: layer.apply(v, x, method=method))
    traced = jitted(variables, x)
    jitted(variables, x + 1.0)
  report.value(f'{label}: calls', calls)
  report.array(f'{label}: eager', eager)
  report.array(f'{label}: jit', traced)
  report.array(f'{label}: unpatched', layer.apply(plain, x, method=method))

# Attention: the projections' dot_general and the einsums (whose
# ``_dot_general`` is the patched ``jax.lax.dot_general``).
mha = nn.MultiHeadDotProductAttention(2, qkv_features=4)
variables = mha.init(jax.random.key(1), x3)
for name in ('dot_general', 'einsum'):
  module = jax.lax if name == 'dot_general' else jnp
  calls = []
  with patched(module, name, calls):
    out = mha.apply(variables, x3)
    jax.jit(mha.apply)(variables, x3 * 0.5)
  report.value(f'attention {name}: calls', calls)
  report.array(f'attention {name}: out', out)
seen = []
orig_einsum = jnp.einsum


def einsum_probe(*args, **kwargs):
  seen.append(kwargs.get('_dot_general') is jax.lax.dot_general)
  return orig_einsum(*args, **kwargs)


jnp.einsum = einsum_probe
try:
  q = jnp.linspace(0.0, 1.0, 16).reshape(1, 2, 2, 4)
  report.array('dot_product_attention', nn.dot_product_attention(q, q, q))
finally:
  jnp.einsum = orig_einsum
report.value('einsum gets the current dot_general', seen)


# A patched dot_general that keeps state in the module being run.
class MLP(nn.Module):
  @nn.compact
  def __call__(self, x):
    return nn.DenseGeneral(2)(nn.Dense(3)(x))


@contextlib.contextmanager
def quantized_dots():
  orig = jax.lax.dot_general

  def qdot(lhs, rhs, dims, *args, **kwargs):
    mdl = nn.module._context.module_stack[-1]
    scale = mdl.variable('quant', 'scale', lambda: jnp.full((), 0.5))
    count = mdl.variable('quant', 'count', lambda: jnp.zeros((), jnp.int32))
    if not mdl.is_initializing():
      count.value += 1
    print('qdot', type(mdl).__name__, kind(lhs), kind(rhs))
    return orig(lhs, rhs * scale.value, dims, *args, **kwargs)

  jax.lax.dot_general = qdot
  try:
    yield
  finally:
    jax.lax.dot_general = orig


model = MLP()
with report.printed('quantized: calls'), quantized_dots():
  variables = model.init(jax.random.key(0), x2)
  y, state = model.apply(variables, x2, mutable=['quant'])
  step = jax.jit(lambda v, x: model.apply(v, x, mutable=['quant']))
  y_jit, state_jit = step(variables, x2)
  step(variables, x2 + 1.0)
report.tree('quantized: variables', variables)
report.array('quantized: eager', y)
report.tree('quantized: eager state', state)
report.array('quantized: jit', y_jit)
report.tree('quantized: jit state', state_jit)
