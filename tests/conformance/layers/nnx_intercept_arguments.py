"""NNX layers with their product function given as an argument
(``dot_general=``, ``dot_general_cls=``, ``einsum_op=``,
``conv_general_dilated=``, attention's ``qkv_dot_general`` /
``out_dot_general``): the keywords each call gets, concrete arrays eagerly
and tracers under ``nnx.jit`` / ``jax.jit``, batched or linearized values
under eager ``nnx.vmap`` / ``nnx.grad``, and a Module-valued
``dot_general`` whose Variable counts the calls."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


def kind(x):
  return 'tracer' if isinstance(x, jax.core.Tracer) else type(x).__name__


def recorder(orig, calls, scale=1.0, einsum=False):
  def fn(*args, **kwargs):
    if einsum:
      eq, lhs, rhs, *rest = args
      calls.append([kind(lhs), kind(rhs), sorted(kwargs)])
      return orig(eq, lhs, rhs * scale, *rest, **kwargs)
    lhs, rhs, *rest = args
    calls.append([kind(lhs), kind(rhs), sorted(kwargs)])
    return orig(lhs, rhs * scale, *rest, **kwargs)

  return fn


x2 = jnp.linspace(-1.0, 1.0, 8).reshape(2, 4)
x3 = jnp.linspace(-1.0, 1.0, 20).reshape(1, 5, 4)
rngs = lambda: nnx.Rngs(0)  # noqa: E731
f32 = jnp.float32

makers = {
  'Linear': lambda c, pet: nnx.Linear(
    4,
    3,
    dot_general=recorder(jax.lax.dot_general, c, 2.0),
    preferred_element_type=pet,
    rngs=rngs(),
  ),
  'LinearGeneral': lambda c, pet: nnx.LinearGeneral(
    4,
    (3, 2),
    dot_general=recorder(jax.lax.dot_general, c, 2.0),
    preferred_element_type=pet,
    rngs=rngs(),
  ),
  'Einsum': lambda c, pet: nnx.Einsum(
    'ab,bc->ac',
    (4, 3),
    einsum_op=recorder(jnp.einsum, c, 2.0, einsum=True),
    preferred_element_type=pet,
    rngs=rngs(),
  ),
  'Conv': lambda c, pet: nnx.Conv(
    4,
    3,
    (2,),
    conv_general_dilated=recorder(jax.lax.conv_general_dilated, c, 2.0),
    preferred_element_type=pet,
    rngs=rngs(),
  ),
  'MultiHeadAttention': lambda c, pet: nnx.MultiHeadAttention(
    2,
    4,
    qkv_dot_general=recorder(jax.lax.dot_general, c),
    out_dot_general=recorder(jax.lax.dot_general, c, 0.5),
    decode=False,
    rngs=rngs(),
  ),
}
inputs = {'Conv': x3, 'MultiHeadAttention': x3}
for label, make in makers.items():
  x = inputs.get(label, x2)
  for pet in (None, f32):
    if pet is not None and label == 'MultiHeadAttention':
      continue
    name = f'{label} pet={pet is not None}'
    calls = []
    layer = make(calls, pet)
    report.array(f'{name}: eager', layer(x))
    report.array(f'{name}: nnx.jit', nnx.jit(lambda m, x: m(x))(layer, x))
    graphdef, state = nnx.split(layer)
    out = jax.jit(lambda s, x: nnx.merge(graphdef, s)(x))(state, x)
    report.array(f'{name}: jax.jit', out)
    report.value(f'{name}: calls', calls)

# Eager transforms run the function on every call, with their tracers.
calls = []
layer = makers['Linear'](calls, None)
for _ in range(2):
  report.array(
    f'vmap {_}', nnx.vmap(lambda m, x: m(x), in_axes=(None, 0))(layer, x2)
  )
  grads = nnx.grad(lambda m: m(x2).sum())(layer)
  report.tree(f'grad {_}', nnx.state(grads))
report.value('eager transforms: calls', calls)


class CountingDot:
  def __call__(self, lhs, rhs, dims, **kwargs):
    COUNT.append([kind(lhs), kind(rhs), sorted(kwargs)])
    return jax.lax.dot_general(lhs, rhs, dims, **kwargs)


COUNT = []
layer = nnx.LinearGeneral(4, 3, dot_general_cls=CountingDot, rngs=rngs())
layer(x2)
nnx.jit(lambda m: m(x2))(layer)
report.value('dot_general_cls: calls', COUNT)


class Counter(nnx.Module):
  """A dot_general that counts its calls in a Variable."""

  def __init__(self):
    self.n = nnx.Variable(jnp.zeros((), jnp.int32))

  def __call__(self, lhs, rhs, dims, **kwargs):
    self.n[...] += 1
    print('counter', kind(lhs), kind(rhs), sorted(kwargs))
    return jax.lax.dot_general(lhs, rhs, dims, **kwargs)


counter = Counter()
layer = nnx.Linear(4, 3, dot_general=counter, rngs=rngs())
step = nnx.jit(lambda m, x: m(x))
with report.printed('module dot_general: calls'):
  layer(x2)
  step(layer, x2)
  step(layer, x2 + 1.0)
report.value('module dot_general: count', int(counter.n[...]))
report.tree('module dot_general: state', nnx.state(layer))
