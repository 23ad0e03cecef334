"""nnx.GraphDef is generic and nnx.PureState is the (GraphDef, State) alias."""

import typing

import jax.numpy as jnp
import report
from flax import nnx

report.text('PureState', repr(nnx.PureState))
report.value(
  'GraphDef[Linear] args',
  typing.get_args(nnx.GraphDef[nnx.Linear]) == (nnx.Linear,),
)
report.value(
  'GraphDef[Linear] origin',
  typing.get_origin(nnx.GraphDef[nnx.Linear]) is nnx.GraphDef,
)
report.value(
  'PureState[Linear] origin',
  typing.get_origin(nnx.PureState[nnx.Linear]) is tuple,
)
report.value(
  'PureState[Linear] args',
  typing.get_args(nnx.PureState[nnx.Linear])
  == (nnx.GraphDef[nnx.Linear], nnx.State),
)


def apply(
  graphdef: nnx.GraphDef[nnx.Linear], state: nnx.State, x
) -> jnp.ndarray:
  return nnx.merge(graphdef, state)(x)


def pure(model: nnx.Linear) -> nnx.PureState[nnx.Linear]:
  return nnx.split(model)


graphdef, state = pure(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
report.array(
  'annotated functions run', apply(graphdef, state, jnp.ones((1, 2)))
)
report.value('isinstance GraphDef', isinstance(graphdef, nnx.GraphDef))
