"""Returning a Variable captured from outside a transform (not passed as
an argument) is an error in every mode; grad's aux may hold one."""

import jax.numpy as jnp
import report
from flax import nnx

outer = nnx.Dict(a=nnx.Variable(jnp.arange(4)))
v = nnx.Variable(jnp.arange(4))
x = jnp.zeros(4)
with report.raises('vmap module'):
  nnx.vmap(lambda x: outer, in_axes=0, out_axes=0)(x)
with report.raises('vmap variable'):
  nnx.vmap(lambda x: v, in_axes=0, out_axes=0)(x)
with report.raises('jit module'):
  nnx.jit(lambda x: outer)(x)
with report.raises('jit graph_updates=False'):
  nnx.jit(lambda x: outer, graph_updates=False)(x)
with report.raises('jit tree mode'):
  nnx.jit(lambda x: outer, graph=False)(x)
with report.raises('vmap graph_updates=False'):
  nnx.vmap(lambda x: outer, graph_updates=False)(x)
with report.raises('scan output'):
  nnx.scan(lambda c, x: (c, outer))(jnp.zeros(()), x)
loss, aux = nnx.grad(lambda x: (x.sum(), outer), has_aux=True)(x)
report.array('grad aux ok', loss)


@nnx.jit
def fresh(x):
  return nnx.Dict(w=nnx.Param(x + 1))


report.array('jit returns a new module', fresh(x)['w'][...])
