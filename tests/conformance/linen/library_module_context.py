"""A library reads Linen's dynamic context to find the Module being run."""

import jax
import jax.numpy as jnp
import flax.linen as nn
import report
from flax.linen import module as module_lib

seen = []


def quantized_dot(x, w):
  # library code: no module argument, finds the caller through the stack
  mdl = module_lib._context.module_stack[-1]
  seen.append(
    (type(mdl).__name__, mdl.name, mdl.scope.path if mdl.scope else None)
  )
  scale = mdl.variable('quant', 'scale', lambda: jnp.ones(()))
  return (x @ w) * scale.value


class QDense(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    w = self.param(
      'kernel', nn.initializers.lecun_normal(), (x.shape[-1], self.features)
    )
    return quantized_dot(x, w)


class Net(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = QDense(3, name='q1')(x)
    return QDense(2)(x)


x = jnp.ones((1, 4))
vs = Net().init(jax.random.key(0), x)
report.tree('variables', vs)
report.text('seen', repr(seen))
report.text('stack after', repr(module_lib._context.module_stack))


# pushing a parent: a module constructed while another is on the stack is
# adopted by it
class Outer(nn.Module):
  def setup(self):
    pass

  @nn.compact
  def __call__(self, x):
    stack = module_lib._context.module_stack
    print('top is self:', stack[-1] is self, len(stack))
    inner = nn.Dense(2)
    print('parent is self:', inner.parent is self)
    return inner(x)


with report.printed('adopted'):
  report.tree('outer', Outer().init(jax.random.key(1), x))
report.text(
  'other stacks',
  repr(
    (module_lib._context.capture_stack, module_lib._context.call_info_stack)
  ),
)
