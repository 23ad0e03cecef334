"""transform_metadata through nnx.scan / nnx.vmap when the function returns
its scanned input (a Variable, a Module, a vmapped stack): the partition
name is removed inside and appears once after, on the input object itself;
a partition name not at the mapped axis is a ValueError; the pytree modes
leave the metadata alone."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

LAYERS = {nnx.PARTITION_NAME: 'layers'}


def param(names=('layers', 'din', 'dout')):
  return nnx.Param(
    jnp.ones((3, 4, 5)), out_sharding=names, eager_sharding=False
  )


class M(nnx.Module):
  def __init__(self):
    self.w = param()


class Block(nnx.Module):
  def __init__(self, rngs):
    self.w = nnx.Param(
      jax.random.normal(rngs.params(), (2, 3)),
      out_sharding=('din', 'dout'),
      eager_sharding=False,
    )


inside = []


def var_body(c, v):
  inside.append(v.out_sharding)
  return c, v


v = param()
_, out = nnx.scan(
  var_body,
  in_axes=(nnx.Carry, 0),
  out_axes=(nnx.Carry, 0),
  transform_metadata=LAYERS,
)(jnp.zeros(()), v)
report.value('variable inside', inside)
report.value('variable after', [out is v, out.out_sharding, v.out_sharding])

inside = []


def module_body(c, m):
  inside.append(m.w.out_sharding)
  return c, m


m = M()
_, out = nnx.scan(
  module_body,
  in_axes=(nnx.Carry, 0),
  out_axes=(nnx.Carry, 0),
  transform_metadata=LAYERS,
)(jnp.zeros(()), m)
report.value('module inside', inside)
report.value('module after', [out is m, out.w.out_sharding, list(out.w.shape)])


def new_body(c, v):
  return c, nnx.Param(v[...] * 2, out_sharding=('a', 'b'), eager_sharding=False)


_, out = nnx.scan(
  new_body,
  in_axes=(nnx.Carry, 0),
  out_axes=(nnx.Carry, 0),
  transform_metadata=LAYERS,
)(jnp.zeros(()), param())
report.value('new output', [out.out_sharding, list(out.shape)])

made, seen = [], []


@nnx.split_rngs(splits=4)
@nnx.vmap(in_axes=0, out_axes=0, transform_metadata=LAYERS)
def make(rngs):
  b = Block(rngs)
  made.append(b.w.out_sharding)
  return b


b = make(nnx.Rngs(0))


@nnx.scan(
  in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), transform_metadata=LAYERS
)
def fwd(x, blk):
  seen.append(blk.w.out_sharding)
  return x @ blk.w[...][:, :2], blk


x, b2 = fwd(jnp.ones(2), b)
report.value('stack made inside', made)
report.value('stack scanned inside', seen)
report.value('stack after', [b2 is b, b.w.out_sharding])
report.array('stack x', x)

inside = []
m = M()
m.w = param(('din', 'layers', 'dout'))
out = nnx.vmap(
  lambda m: (inside.append(m.w.out_sharding), m)[1],
  in_axes=1,
  out_axes=1,
  transform_metadata=LAYERS,
)(m)
report.value('vmap axis 1', [inside, out is m, m.w.out_sharding])

with report.raises('scan name not at axis'):
  nnx.scan(
    lambda c, v: (c, 0),
    in_axes=(nnx.Carry, 0),
    out_axes=(nnx.Carry, 0),
    transform_metadata=LAYERS,
  )(jnp.zeros(()), param(('din', 'dout')))
with report.raises('vmap name not at axis'):
  nnx.vmap(lambda v: 0, transform_metadata=LAYERS)(param(('din', 'dout')))
with report.raises('transform_metadata name not at axis'):
  nnx.transform_metadata(partition='layers')(lambda v: 0)(
    param(('din', 'dout'))
  )
with report.raises('spmd.remove_axis name not at axis'):
  nnx.spmd.remove_axis(nnx.State({'w': param(('din', 'dout'))}), 0, LAYERS)
v = param()
v.add_axis(0, 'x')
v.remove_axis(1, 'din')
report.value('Variable.add_axis/remove_axis names', v.out_sharding)

for name, kw in [
  ('gu=False', dict(graph_updates=False)),
  ('tree', dict(graph=False)),
]:
  for names in [('layers', 'din', 'dout'), ('din', 'dout')]:
    inside = []
    v = param(names)
    _, out = nnx.scan(
      lambda c, v: (
        inside.append(v.out_sharding),
        (c, nnx.Param(v[...], out_sharding=('a', 'b'), eager_sharding=False)),
      )[1],
      in_axes=(nnx.Carry, 0),
      out_axes=(nnx.Carry, 0),
      transform_metadata=LAYERS,
      **kw,
    )(jnp.zeros(()), v)
    report.value(
      f'{name} {names} scan', [inside, out.out_sharding, v.out_sharding]
    )
