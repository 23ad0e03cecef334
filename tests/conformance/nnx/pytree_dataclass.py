"""nnx.dataclass and dataclass fields with metadata={'static': ...}."""

import dataclasses

import jax
import jax.numpy as jnp
import report
from flax import nnx


@nnx.dataclass
class DC(nnx.Pytree):
  a: int
  b: jax.Array
  c: jax.Array = nnx.data(default=None)
  d: int = nnx.static(default=3)
  e: list = dataclasses.field(default_factory=list, metadata={'static': False})


dc = DC(1, jnp.ones(1))
report.tree('leaves', dc)
report.value('fields', [f.name for f in dataclasses.fields(DC)])
report.value(
  'static-meta', [f.metadata.get('static') for f in dataclasses.fields(DC)]
)
report.value('eq', DC(1, 2) == DC(1, 2))
with report.printed('repr'):
  print(dc)


@dataclasses.dataclass
class DC2(nnx.Pytree):
  a: int = dataclasses.field(metadata={'static': False})
  b: jax.Array = dataclasses.field(default=None, metadata={'static': True})


report.value('plain-dataclass-leaves', jax.tree.leaves(DC2(1)))
with report.raises('plain-dataclass-static-array'):
  DC2(1, jnp.ones(1))
