"""nnx.vmap ensembles and nnx.scan over layers."""

import jax.numpy as jnp
import report
from flax import nnx


@nnx.vmap(in_axes=0, out_axes=0)
def make(rngs):
  return nnx.Linear(3, 3, rngs=rngs)


ensemble = make(nnx.Rngs(0).fork(split=4))
report.tree('ensemble', nnx.state(ensemble))


@nnx.vmap(in_axes=(0, None))
def forward(model, x):
  return model(x)


x = jnp.ones((2, 3))
report.array('ensemble-out', forward(ensemble, x))


@nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
def run(layer, h):
  return nnx.relu(layer(h))


report.array('scan-out', run(ensemble, x))
