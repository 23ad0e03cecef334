"""Loop carries keep their Variable objects (scan, fori_loop, while_loop
in every mode); while_loop refuses a body that replaces a Variable."""

import jax.numpy as jnp
import report
from flax import nnx

for name, kw in [
  ('gu=False', dict(graph_updates=False)),
  ('tree', dict(graph=False)),
  ('graph', {}),
]:
  counter = nnx.Variable(jnp.array(0))

  @nnx.scan(**kw)
  def step(c, x):
    c[...] += 1
    return c, x * 2

  out, ys = step(counter, jnp.arange(3))
  report.value(f'{name} scan same', out is counter)
  report.array(f'{name} scan value', counter[...])
  report.array(f'{name} scan ys', ys)

  m = nnx.Dict(a=nnx.Variable(jnp.zeros(3)))

  @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), **kw)
  def step2(c, x):
    c['a'][...] += x
    return c, x

  out, _ = step2(m, jnp.ones((2, 3)))
  report.value(f'{name} scan module same', out is m)
  report.value(f'{name} scan module var same', out['a'] is m['a'])

  acc = nnx.Dict(a=nnx.Variable(jnp.zeros(3)))

  def body(i, c):
    c['a'][...] += 1.0
    return c

  out = nnx.fori_loop(0, 2, body, acc, **kw)
  report.value(f'{name} fori same', out is acc)
  report.value(f'{name} fori var same', out['a'] is acc['a'])
  report.array(f'{name} fori value', out['a'][...])
  out = nnx.while_loop(
    lambda c: c['a'][...][0] < 5, lambda c: body(0, c), acc, **kw
  )
  report.value(f'{name} while same', out is acc)
  report.value(f'{name} while var same', out['a'] is acc['a'])
  report.array(f'{name} while value', acc['a'][...])

lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))


def swap(s):
  mod, c = s
  mod.kernel = nnx.Param(jnp.zeros((2, 2)))
  return mod, c - 1


with report.raises('while_loop replaces a Variable'):
  nnx.while_loop(lambda s: s[1] > 0, swap, (lin, 2))
