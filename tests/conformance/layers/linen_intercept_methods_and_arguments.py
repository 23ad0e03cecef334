"""Linen layers with a product function given as an argument
(``dot_general=``, ``dot_general_cls=``, ``conv_general_dilated=``,
attention's ``qkv_dot_general`` / ``einsum_dot_general``) and with
``nn.intercept_methods`` swapping the kernel (LoRA / quantization style):
every call reaches the function, eagerly with concrete arrays and under
``jax.jit`` with tracers."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


def kind(x):
  return 'tracer' if isinstance(x, jax.core.Tracer) else type(x).__name__


def recorder(orig, calls, scale=1.0):
  def fn(lhs, rhs, *args, **kwargs):
    calls.append([kind(lhs), kind(rhs), len(args), sorted(kwargs)])
    return orig(lhs, rhs * scale, *args, **kwargs)

  return fn


x2 = jnp.linspace(-1.0, 1.0, 8).reshape(2, 4)
x3 = jnp.linspace(-1.0, 1.0, 20).reshape(1, 5, 4)


def run(label, layer, x):
  calls = []
  variables = layer(calls).init(jax.random.key(0), x)
  report.array(f'{label}: eager', layer(calls).apply(variables, x))
  jitted = jax.jit(lambda v, x: layer(calls).apply(v, x))
  report.array(f'{label}: jit', jitted(variables, x))
  jitted(variables, x * 2.0)
  report.value(f'{label}: calls', calls)


run(
  'Dense dot_general',
  lambda c: nn.Dense(3, dot_general=recorder(jax.lax.dot_general, c, 2.0)),
  x2,
)
run(
  'DenseGeneral dot_general',
  lambda c: nn.DenseGeneral(
    (2, 2), dot_general=recorder(jax.lax.dot_general, c, 2.0)
  ),
  x2,
)
run(
  'Conv conv_general_dilated',
  lambda c: nn.Conv(
    3, (2,), conv_general_dilated=recorder(jax.lax.conv_general_dilated, c, 2.0)
  ),
  x3,
)
run(
  'MHA qkv/out dot_general',
  lambda c: nn.MultiHeadDotProductAttention(
    2,
    qkv_features=4,
    qkv_dot_general=recorder(jax.lax.dot_general, c),
    out_dot_general=recorder(jax.lax.dot_general, c, 0.5),
  ),
  x3,
)
run(
  'MHA einsum_dot_general',
  lambda c: nn.MultiHeadDotProductAttention(
    2,
    qkv_features=4,
    attention_fn=lambda *a, **k: nn.dot_product_attention(
      *a, **k, einsum_dot_general=recorder(jax.lax.dot_general, c)
    ),
  ),
  x3,
)

CLS_CALLS = []


class CountingDot:
  """A ``dot_general_cls``: one instance per call of the layer."""

  def __init__(self):
    CLS_CALLS.append('new')

  def __call__(self, lhs, rhs, dims, precision=None, **kwargs):
    CLS_CALLS.append([kind(lhs), kind(rhs), sorted(kwargs)])
    return jax.lax.dot_general(lhs, rhs, dims, precision=precision)


layer = nn.Dense(2, dot_general_cls=CountingDot)
variables = layer.init(jax.random.key(0), x2)
report.array('dot_general_cls: eager', layer.apply(variables, x2))
report.array('dot_general_cls: jit', jax.jit(layer.apply)(variables, x2))
report.value('dot_general_cls: calls', CLS_CALLS)


# nn.intercept_methods: a LoRA-style interceptor adds a low-rank update to
# every Dense kernel by patching jax.lax.dot_general while Dense runs; its
# factors are variables of the intercepted module.
def lora(next_fun, args, kwargs, context):
  if not (
    isinstance(context.module, nn.Dense) and context.method_name == '__call__'
  ):
    return next_fun(*args, **kwargs)
  mdl = context.module
  orig = jax.lax.dot_general

  def dot(lhs, rhs, dims, *a, **k):
    a_ = mdl.variable(
      'lora', 'a', lambda: jnp.full((rhs.shape[0], 1), 0.1, rhs.dtype)
    )
    b_ = mdl.variable(
      'lora', 'b', lambda: jnp.full((1, rhs.shape[1]), 0.2, rhs.dtype)
    )
    print('lora', mdl.name, kind(lhs), kind(rhs))
    return orig(lhs, rhs + a_.value @ b_.value, dims, *a, **k)

  jax.lax.dot_general = dot
  try:
    return next_fun(*args, **kwargs)
  finally:
    jax.lax.dot_general = orig


class Net(nn.Module):
  @nn.compact
  def __call__(self, x):
    return nn.Dense(2)(nn.relu(nn.Dense(3)(x)))


net = Net()
with report.printed('intercept_methods: calls'):
  with nn.intercept_methods(lora):
    variables = net.init(jax.random.key(0), x2)
    eager = net.apply(variables, x2)
    jitted = jax.jit(net.apply)
    traced = jitted(variables, x2)
    jitted(variables, x2 + 1.0)
report.tree('intercept_methods: variables', variables)
report.array('intercept_methods: eager', eager)
report.array('intercept_methods: jit', traced)
report.array('without the interceptor', net.apply(variables, x2))
