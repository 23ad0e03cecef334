"""Gradients w.r.t. perturbations: ``Module.perturb`` with the
perturbations given to ``nnx.capture`` as ``init`` (no type asked for, or
another one), under nnx.value_and_grad / nnx.grad (has_aux), nnx.jit,
nested Modules in graph and tree mode, nnx.scan (a StateAxes carrying a
counter, forward and reverse), nnx.vmap, and jax.grad of a split State."""

import flax
import jax
import jax.numpy as jnp
import report
from flax import nnx


class Model(nnx.Module):
  def __init__(self, rngs):
    self.linear1 = nnx.Linear(2, 3, rngs=rngs)
    self.linear2 = nnx.Linear(3, 4, rngs=rngs)

  def __call__(self, x):
    x = self.perturb('xgrad', nnx.gelu(self.linear1(x)))
    return self.linear2(x)


rngs = nnx.Rngs(0)
model = Model(rngs)
x, y = rngs.uniform((1, 2)), rngs.uniform((1, 4))
_, perturbations = nnx.capture(model, nnx.Perturbation)(x)
report.tree('perturbations', perturbations)


def loss(model, perturbations, x, y):
  return nnx.capture(lambda m: jnp.mean((m(x) - y) ** 2), init=perturbations)(
    model
  )


loss_grad = nnx.value_and_grad(loss, argnums=(0, 1))
value, (wg, ig) = loss_grad(model, perturbations, x, y)
report.value('loss', float(value))
report.tree('perturbation-grads', ig)
report.tree('weight-grads', wg)
value, (_, ig) = nnx.jit(loss_grad)(model, perturbations, x, y)
report.value('jit-loss', float(value))
report.tree('jit-perturbation-grads', ig)


def loss_aux(model, perturbations, x, y):
  out, inter = nnx.capture(model, nnx.Intermediate, init=perturbations)(x)
  return jnp.mean((out - y) ** 2), inter


(_, ig), inter = nnx.grad(loss_aux, argnums=(0, 1), has_aux=True)(
  model, perturbations, x, y
)
report.tree('has-aux-grads', ig)
report.value('has-aux-intermediates', sorted(inter))


class Foo(nnx.Module):
  @nnx.jit
  def __call__(self, x):
    x = self.perturb('grad_of_x', x)
    self.sow(nnx.Intermediate, 'y', 3 * x)
    return 3 * x


class Bar(nnx.Module):
  def __init__(self):
    self.foos = nnx.data([Foo() for _ in range(3)])

  def __call__(self, x):
    for foo in self.foos:
      x = foo(x)
    return x


for graph in (True, False):
  flax.config.update('nnx_graph_mode', graph)
  bar = Bar()
  _, perts = nnx.capture(bar, nnx.Perturbation)(1.0)

  @nnx.jit
  def nested_step(model, perturbations, x):
    def nested_loss(model, perturbations, x):
      return nnx.capture(model, nnx.Intermediate, init=perturbations)(x)

    (_, grads), sowed = nnx.grad(nested_loss, argnums=(0, 1), has_aux=True)(
      model, perturbations, x
    )
    return nnx.merge_state(grads, sowed)

  report.tree(f'nested-graph-{graph}', nested_step(bar, perts, 1.0))
flax.config.update('nnx_graph_mode', True)


class Counter(nnx.Module):
  def __init__(self):
    self.count = nnx.BatchStat(jnp.array(0.0))
    self.w = nnx.Param(jnp.array(2.0))

  def step(self, c, x):
    self.count[...] += 1
    x = self.perturb('px', x)
    self.sow(nnx.Intermediate, 'h', c * self.w + x + self.count[...])
    return c + x, c * 2


for reverse in (False, True):

  def scanned(m, c, xs):
    axes = nnx.StateAxes({nnx.Intermediate: 0, ...: nnx.Carry})
    return nnx.scan(
      Counter.step,
      in_axes=(axes, nnx.Carry, 0),
      out_axes=(nnx.Carry, 0),
      reverse=reverse,
    )(m, c, xs)

  m = Counter()
  (c, ys), perts, inter = nnx.capture(
    scanned, nnx.Perturbation, nnx.Intermediate
  )(m, jnp.array(1.0), jnp.arange(4.0))
  report.array(f'scan-{reverse}-carry', c)
  report.array(f'scan-{reverse}-ys', ys)
  report.array(f'scan-{reverse}-count', m.count[...])
  report.tree(f'scan-{reverse}-intermediates', inter)

  def scan_loss(m, p, c, xs):
    c, ys = nnx.capture(scanned, init=p)(m, c, xs)
    return c + ys.sum()

  report.tree(
    f'scan-{reverse}-grads',
    nnx.grad(scan_loss, argnums=1)(m, perts, jnp.array(1.0), jnp.arange(4.0)),
  )


class Dot(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(4.0))

  def __call__(self, x):
    x = self.perturb('px', x)
    y = jnp.dot(x, self.w)
    self.sow(nnx.Intermediate, 'y', y)
    return y


def vmapped(m, x):
  axes = nnx.StateAxes({nnx.Intermediate: 0, ...: None})
  return nnx.vmap(lambda m, x: m(x), in_axes=(axes, 0))(m, x)


dot, xs = Dot(), jnp.ones((3, 4))
_, perts = nnx.capture(vmapped, nnx.Perturbation)(dot, xs)
report.tree('vmap-perturbations', perts)
report.tree(
  'vmap-grads',
  nnx.grad(lambda p, m: nnx.capture(vmapped, init=p)(m, xs).sum())(perts, dot),
)

graphdef, params = nnx.split(dot)
_, perts = nnx.capture(dot, nnx.Perturbation)(jnp.ones(4))


def split_loss(params, p, x):
  return nnx.capture(nnx.merge(graphdef, params), init=p)(x)


dparams, dperts = jax.jit(jax.grad(split_loss, argnums=(0, 1)))(
  params, perts, jnp.ones(4)
)
report.tree('jax-grad-params', dparams)
report.tree('jax-grad-perturbations', dperts)
