"""Linen nn.GRUCell: initialize_carry, init, one step."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

cell = nn.GRUCell(features=3)
x = jnp.ones((2, 4))
carry = cell.initialize_carry(jax.random.key(1), x.shape)
report.tree('carry', carry)
variables = cell.init(jax.random.key(0), carry, x)
report.tree('variables', variables)
new_carry, y = cell.apply(variables, carry, x)
report.tree('new-carry', new_carry)
report.array('y', y)
