"""nnx.tabulate: rows for calls made inside nnx.scan / nnx.vmap /
nnx.remat, how often the model's methods run (flop columns included),
and depth counting a method's name."""

import collections

import jax
import jax.numpy as jnp
import report
from flax import nnx

wide = {'width': 250, 'force_terminal': False}
calls = collections.Counter()


class Block(nnx.Module):
  def __init__(self, rngs):
    self.lin = nnx.Linear(3, 3, rngs=rngs)

  def __call__(self, x):
    calls['Block'] += 1
    return jax.nn.relu(self.lin(x))


class Stack(nnx.Module):
  def __init__(self, rngs):
    @nnx.split_rngs(splits=4)
    @nnx.vmap(in_axes=(0,), out_axes=0)
    def make(rngs):
      return Block(rngs)

    self.blocks = make(rngs)

  def __call__(self, x):
    calls['Stack'] += 1

    @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
    def step(block, x):
      return block(x)

    return step(self.blocks, x)


class Mapped(nnx.Module):
  def __init__(self, rngs):
    self.blocks = nnx.vmap(lambda r: Block(r), in_axes=0)(rngs.fork(split=3))
    self.extra = nnx.List([Block(rngs), Block(rngs)])

  def __call__(self, x):
    calls['Mapped'] += 1
    y = nnx.vmap(lambda b, x: b(x), in_axes=(0, None))(self.blocks, x)
    for b in self.extra:
      x = b(x)
    x = x + self.extra[0](x * 0 + 1)  # a repeated call
    return y.sum(0) + nnx.remat(lambda b, x: b(x))(self.extra[0], x)

  def encode(self, x):
    calls['Mapped.encode'] += 1
    return self.extra[1](self(x))


x = jnp.ones((2, 3))
modes = {
  'plain': {},
  'flops': {'compute_flops': True},
  'both': {'compute_flops': True, 'compute_vjp_flops': True},
}
for model in (Stack, Mapped):
  for mode, kwargs in modes.items():
    calls.clear()
    label = f'{model.__name__} {mode}'
    table = nnx.tabulate(model(nnx.Rngs(0)), x, console_kwargs=wide, **kwargs)
    report.text(label, table)
    report.value(f'{label} calls', dict(sorted(calls.items())))

for depth in (0, 1, 2):
  for method in ('__call__', 'encode'):
    calls.clear()
    table = nnx.tabulate(
      Mapped(nnx.Rngs(0)), x, depth=depth, method=method, console_kwargs=wide
    )
    report.text(f'depth {depth} {method}', table)
    report.value(f'depth {depth} {method} calls', dict(sorted(calls.items())))
