"""nnx.capture with graph mode off: intermediates, perturbations, method
outputs of a bound method's Module, inside nnx.jit and nnx.grad."""

import warnings

import jax
import jax.numpy as jnp
import report
from flax import nnx

warnings.simplefilter('error', DeprecationWarning)


def shapes(state):
  return jax.tree.map(lambda x: list(jnp.shape(x)), nnx.to_pure_dict(state))


class Inner(nnx.Module):
  def __init__(self, rngs):
    self.l = nnx.Linear(2, 2, rngs=rngs)

  def __call__(self, x):
    x = self.perturb('p', x)
    y = self.l(x)
    self.sow(nnx.Intermediate, 'h', y)
    return y


class Outer(nnx.Module):
  def __init__(self, rngs):
    self.inner = Inner(rngs)

  def __call__(self, x):
    return self.inner(x)

  def other(self, x):
    return self.inner(x) * 2


x = jnp.ones((1, 2))
with nnx.set_graph_mode(False):
  m = Outer(nnx.Rngs(0))
  _, inter, pert = nnx.capture(m, nnx.Intermediate, nnx.Perturbation)(x)
  report.value('intermediates', shapes(inter))
  report.value('perturbations', shapes(pert))
  out, inter = nnx.capture(
    m.other, nnx.Intermediate, method_outputs=nnx.Intermediate
  )(x)
  report.value('bound method: method outputs', shapes(inter))
  report.array('bound method: output', out)
  _, inter, pert = nnx.jit(
    lambda m, x: nnx.capture(m, nnx.Intermediate, nnx.Perturbation)(x)
  )(m, x)
  report.value('inside jit: intermediates', shapes(inter))
  report.value('inside jit: perturbations', shapes(pert))

  def loss(m, x):
    y, inter = nnx.capture(m, nnx.Intermediate)(x)
    return y.sum(), inter

  _, inter = nnx.grad(loss, has_aux=True)(m, x)
  report.value('grad has_aux intermediates', shapes(inter))
