"""Layers call the JAX function they use as it is when they run.

Quantization and LoRA libraries patch ``jax.lax.dot_general``,
``conv_general_dilated``, ``jnp.einsum``, ... while a model runs, or hand a
product function to the layer. The function must see every call, with the
caller's values (concrete arrays when called eagerly, tracers under a
transform the user asked for), and what it returns must be the layer's
result: no cache of ours (a hidden ``jax.jit``, a function bound when a
module was imported) may stand between the layer and the function.
"""

import contextlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn
from flax import nnx


def _kind(x):
  if isinstance(x, jax.core.Tracer):
    return 'tracer'
  return 'array' if isinstance(x, jax.Array) else type(x).__name__


@contextlib.contextmanager
def _patched(module, name, scale=1.0):
  """Patches ``module.name`` with a recorder that scales the kernel operand;
  yields the list of ``(operand kinds, keyword names)`` of the calls."""
  orig = getattr(module, name)
  calls = []

  def fake(*args, **kwargs):
    if name == 'einsum':
      eq, lhs, rhs, *rest = args
      calls.append(((_kind(lhs), _kind(rhs)), tuple(sorted(kwargs))))
      return orig(eq, lhs, rhs * scale, *rest, **kwargs)
    if args:
      lhs, rhs, *rest = args
      calls.append(((_kind(lhs), _kind(rhs)), tuple(sorted(kwargs))))
      return orig(lhs, rhs * scale, *rest, **kwargs)
    lhs, rhs = kwargs['lhs'], kwargs['rhs']
    calls.append(((_kind(lhs), _kind(rhs)), tuple(sorted(kwargs))))
    return orig(**dict(kwargs, rhs=rhs * scale))

  setattr(module, name, fake)
  try:
    yield calls
  finally:
    setattr(module, name, orig)


X2 = jnp.linspace(-1.0, 1.0, 8).reshape(2, 4)
X3 = jnp.linspace(-1.0, 1.0, 20).reshape(1, 5, 4)

LINEN = {
  'Dense': (jax.lax, 'dot_general', lambda: nn.Dense(3), X2, None),
  'DenseGeneral': (
    jax.lax,
    'dot_general',
    lambda: nn.DenseGeneral((3, 2)),
    X2,
    None,
  ),
  'Einsum': (jnp, 'einsum', lambda: nn.Einsum((4, 3), 'ab,bc->ac'), X2, None),
  'Conv': (jax.lax, 'conv_general_dilated', lambda: nn.Conv(3, (3,)), X3, None),
  'ConvTranspose': (
    jax.lax,
    'conv_transpose',
    lambda: nn.ConvTranspose(3, (2,)),
    X3,
    None,
  ),
  'ConvLocal': (
    jax.lax,
    'conv_general_dilated_local',
    lambda: nn.ConvLocal(2, (3,)),
    X3,
    None,
  ),
  'Embed.attend': (jnp, 'dot', lambda: nn.Embed(5, 4), X2, 'attend'),
}


@pytest.mark.parametrize('label', sorted(LINEN))
def test_linen_layer_calls_the_patched_function_every_time(label):
  module, name, make, x, method = LINEN[label]
  layer = make()
  variables = layer.init(jax.random.key(0), x, method=method)
  expected = layer.apply(variables, x, method=method)
  with _patched(module, name, scale=0.0) as calls:
    zero_kernel = [layer.apply(variables, x, method=method) for _ in range(2)]
    traced = jax.jit(lambda v, x: layer.apply(v, x, method=method))(
      variables, x
    )
  # each eager call with concrete arrays, then the trace with tracers
  kinds = [k for k, _ in calls]
  assert kinds == [('array', 'array')] * 2 + [('tracer', 'tracer')], calls
  # what the patched function returns is the layer's result
  bias = variables['params'].get('bias', 0.0)
  for y in (*zero_kernel, traced):
    assert not np.allclose(y, expected)
    np.testing.assert_allclose(y, jnp.broadcast_to(bias, y.shape), atol=1e-6)


def test_linen_keywords_match_the_lax_signatures():
  with _patched(jax.lax, 'conv_general_dilated_local') as calls:
    layer = nn.ConvLocal(2, (3,))
    layer.init(jax.random.key(0), X3)
  # operands by keyword, the window geometry too
  assert calls[0][1] == (
    'dimension_numbers',
    'filter_shape',
    'lhs',
    'lhs_dilation',
    'padding',
    'precision',
    'rhs',
    'rhs_dilation',
    'window_strides',
  )
  with _patched(jnp, 'dot') as calls:
    nn.Embed(5, 4).init(jax.random.key(0), X2, method='attend')
  assert calls == [(('array', 'array'), ())]
  with _patched(jnp, 'einsum') as calls:
    nn.Einsum((4, 3), 'ab,bc->ac').init(jax.random.key(0), X2)
  assert calls == [
    (('array', 'array'), ('precision', 'preferred_element_type'))
  ]


def test_linen_attention_einsum_uses_the_current_dot_general():
  q = jnp.linspace(0.0, 1.0, 16).reshape(1, 2, 2, 4)
  expected = nn.dot_product_attention(q, q, q)
  with _patched(jax.lax, 'dot_general') as calls:
    out = nn.dot_product_attention(q, q, q)
  # jnp.einsum traces its dot_general argument (one per einsum)
  assert len(calls) == 2
  np.testing.assert_allclose(out, expected, rtol=1e-6)
  seen = []
  orig = jnp.einsum

  def einsum(*args, **kwargs):
    seen.append(kwargs.get('_dot_general') is jax.lax.dot_general)
    return orig(*args, **kwargs)

  jnp.einsum = einsum
  try:
    nn.dot_product_attention(q, q, q)
  finally:
    jnp.einsum = orig
  assert seen == [True, True]


def test_linen_patched_function_creates_variables_through_the_context():
  class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
      return nn.DenseGeneral(2)(nn.Dense(3)(x))

  orig = jax.lax.dot_general
  kinds = []

  def qdot(lhs, rhs, dims, *args, **kwargs):
    mdl = nn.module._context.module_stack[-1]
    scale = mdl.variable('quant', 'scale', lambda: jnp.full((), 0.5))
    count = mdl.variable('quant', 'count', lambda: jnp.zeros((), jnp.int32))
    if not mdl.is_initializing():
      count.value += 1
    kinds.append((_kind(lhs), _kind(rhs)))
    return orig(lhs, rhs * scale.value, dims, *args, **kwargs)

  model = MLP()
  plain = model.init(jax.random.key(0), X2)
  jax.lax.dot_general = qdot
  try:
    variables = model.init(jax.random.key(0), X2)
    y, state = model.apply(variables, X2, mutable=['quant'])
    step = jax.jit(lambda v, x: model.apply(v, x, mutable=['quant']))
    y_jit, state_jit = step(variables, X2)
  finally:
    jax.lax.dot_general = orig
  assert kinds[:4] == [('array', 'array')] * 4
  assert kinds[4:] == [('tracer', 'tracer')] * 2
  for s in (state, state_jit):
    assert int(s['quant']['Dense_0']['count']) == 1
  np.testing.assert_allclose(y, y_jit, rtol=1e-6)
  assert not np.allclose(y, model.apply(plain, X2))


def test_linen_intercept_methods_swaps_the_kernel():
  def interceptor(next_fun, args, kwargs, context):
    if not isinstance(context.module, nn.Dense):
      return next_fun(*args, **kwargs)
    orig = jax.lax.dot_general

    def zero_kernel(lhs, rhs, dims, *a, **k):
      return orig(lhs, jnp.zeros_like(rhs), dims, *a, **k)

    jax.lax.dot_general = zero_kernel
    try:
      return next_fun(*args, **kwargs)
    finally:
      jax.lax.dot_general = orig

  layer = nn.Dense(3, bias_init=nn.initializers.ones)
  variables = layer.init(jax.random.key(0), X2)
  with nn.intercept_methods(interceptor):
    for y in (layer.apply(variables, X2), jax.jit(layer.apply)(variables, X2)):
      np.testing.assert_allclose(y, np.ones((2, 3)))
  assert not np.allclose(layer.apply(variables, X2), 1.0)


def test_linen_make_rng_calls_fold_in_every_time():
  with _patched(jax.random, 'fold_in') as calls:
    for _ in range(2):
      nn.Dense(2).init(jax.random.key(0), X2)
  # the key, and the uint32 hash of the stream's path and counter
  assert [k for k, _ in calls] == [('array', 'uint32')] * 2


NNX_CALL_TIME = {
  'LinearGeneral': (
    jax.lax,
    'dot_general',
    lambda: nnx.LinearGeneral(4, (3, 2), rngs=nnx.Rngs(0)),
    X2,
    '__call__',
  ),
  'ConvTranspose': (
    jax.lax,
    'conv_transpose',
    lambda: nnx.ConvTranspose(4, 3, (2,), rngs=nnx.Rngs(0)),
    X3,
    '__call__',
  ),
  'Embed.attend': (
    jnp,
    'dot',
    lambda: nnx.Embed(5, 4, rngs=nnx.Rngs(0)),
    X2,
    'attend',
  ),
}


@pytest.mark.parametrize('label', sorted(NNX_CALL_TIME))
def test_nnx_layer_calls_the_patched_function_every_time(label):
  module, name, make, x, method = NNX_CALL_TIME[label]
  layer = make()
  expected = getattr(layer, method)(x)
  with _patched(module, name, scale=0.0) as calls:
    eager = [getattr(layer, method)(x) for _ in range(2)]
    traced = nnx.jit(lambda m, x: getattr(m, method)(x))(layer, x)
  kinds = [k for k, _ in calls]
  assert kinds == [('array', 'array')] * 2 + [('tracer', 'tracer')], calls
  for y in (*eager, traced):
    assert not np.allclose(y, expected)


def test_nnx_product_arguments_get_flax_keywords():
  calls = []

  def dot(lhs, rhs, dims, **kwargs):
    calls.append(tuple(sorted(kwargs)))
    return jax.lax.dot_general(lhs, rhs, dims, **kwargs)

  nnx.Linear(4, 3, dot_general=dot, rngs=nnx.Rngs(0))(X2)
  nnx.LinearGeneral(4, 3, dot_general=dot, rngs=nnx.Rngs(0))(X2)
  nnx.Linear(
    4, 3, dot_general=dot, preferred_element_type=jnp.float32, rngs=nnx.Rngs(0)
  )(X2)
  assert calls == [
    ('out_sharding', 'precision'),
    ('out_sharding', 'precision'),
    ('out_sharding', 'precision', 'preferred_element_type'),
  ]


def test_nnx_module_dot_general_counts_every_call():
  class Counter(nnx.Module):
    def __init__(self):
      self.n = nnx.Variable(jnp.zeros((), jnp.int32))

    def __call__(self, lhs, rhs, dims, **kwargs):
      self.n[...] += 1
      return jax.lax.dot_general(lhs, rhs, dims, **kwargs)

  counter = Counter()
  layer = nnx.Linear(4, 3, dot_general=counter, rngs=nnx.Rngs(0))
  layer(X2)
  layer(X2)
  nnx.jit(lambda m: m(X2))(layer)
  nnx.vmap(lambda m, x: m(x), in_axes=(None, 0))(layer, X2)
  assert int(counter.n[...]) == 4


def test_nnx_patched_function_adds_a_variable():
  class Scale(nnx.Variable):
    pass

  current = []
  orig = jax.lax.dot_general

  def scaled(lhs, rhs, dims, *args, **kwargs):
    layer = current[-1]
    if not hasattr(layer, 'qscale'):
      layer.qscale = Scale(jnp.full((), 0.0))
    return orig(lhs, rhs * layer.qscale[...], dims, *args, **kwargs)

  def call(layer, x):
    current.append(layer)
    return layer(x)

  eager_layer = nnx.LinearGeneral(4, 3, use_bias=False, rngs=nnx.Rngs(0))
  jit_layer = nnx.LinearGeneral(4, 3, use_bias=False, rngs=nnx.Rngs(0))
  jax.lax.dot_general = scaled
  try:
    outs = [call(eager_layer, X2), nnx.jit(call)(jit_layer, X2)]
  finally:
    jax.lax.dot_general = orig
  for y in outs:
    np.testing.assert_allclose(y, np.zeros((2, 3)))
  for layer in (eager_layer, jit_layer):
    assert isinstance(layer.qscale, Scale)


_LAZY_DEFAULTS = """
import jax, jax.numpy as jnp
orig = (jax.lax.dot_general, jax.lax.conv_general_dilated, jnp.einsum)
from flax import nnx
jax.lax.dot_general = lambda *a, **k: None
jax.lax.conv_general_dilated = lambda *a, **k: None
jnp.einsum = lambda *a, **k: None
r = nnx.Rngs(0)
got = (
  nnx.Linear(2, 2, rngs=r).dot_general,
  nnx.Conv(2, 2, 1, rngs=r).conv_general_dilated,
  nnx.Einsum('ab,bc->ac', (2, 2), rngs=r).einsum_op,
)
print(all(a is b for a, b in zip(got, orig)))
"""


def test_nnx_defaults_are_bound_when_flax_nnx_is_imported():
  # A layer module that first loads while a library has patched the JAX
  # functions must not keep the patch as its default.
  out = subprocess.run(
    [sys.executable, '-c', _LAZY_DEFAULTS],
    capture_output=True,
    text=True,
    timeout=300,
    check=True,
  )
  assert out.stdout.strip() == 'True', out.stderr
