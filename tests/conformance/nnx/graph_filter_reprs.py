"""Reprs of the path filters (PathContains shows exact=) and what they
select."""

import jax.numpy as jnp
import report
from flax import nnx

report.text(
  'path-contains',
  repr(
    [
      nnx.PathContains('a'),
      nnx.PathContains(1, exact=False),
      nnx.PathContains('kernel', True),
    ]
  ),
)
m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
report.tree('exact', nnx.state(m, nnx.PathContains('kernel')))
report.tree('substring', nnx.state(m, nnx.PathContains('ker', exact=False)))
report.value('no-match', len(nnx.state(m, nnx.PathContains('ker'))))
report.value('equal', nnx.PathContains('a') == nnx.PathContains('a'))
report.value('array', float(jnp.sum(m.bias[...])))
