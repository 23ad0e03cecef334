"""The JAX side of a hijax Variable's type: the effect its primitives
carry and the quasi-dynamic data (what it holds at one point of a traced
program) that :mod:`flax.nnx._hijax` tracks for it.
"""

from __future__ import annotations

import dataclasses
import typing as tp

from jax._src import core
from jax._src import effects

from flax.nnx.variablelib import Variable

PyTreeDef = tp.Any


class VariableEffect(effects.Effect):
  """The effect of reading, writing or creating a hijax Variable."""


variable_effect = VariableEffect()
effects.control_flow_allowed_effects.add_type(VariableEffect)
effects.custom_derivatives_allowed_effects.add_type(VariableEffect)


@dataclasses.dataclass(frozen=True)
class VariableQDD(core.QuasiDynamicData):
  """What a mutable hijax Variable holds at one point of a traced program:
  the abstract values of its leaves, the pytree structure of the plain
  Variable they make up (its type and metadata), and that type."""

  leaf_avals: tuple[core.AbstractValue, ...]
  treedef: PyTreeDef
  var_type: type[Variable[tp.Any]]

  def to_tangent_qdd(self):
    tangents = tuple(a.to_tangent_aval() for a in self.leaf_avals)
    return VariableQDD(tangents, self.treedef, self.var_type)

  def normalize(self):
    leaves = tuple(a.normalize() for a in self.leaf_avals)
    return VariableQDD(leaves, self.treedef, self.var_type)
