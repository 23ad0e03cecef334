"""nnx.tabulate runs each method of the model as often as Flax 0.12.8
does (its counts are in FLAX_CALLS), flop columns included."""

import jax.numpy as jnp
import pytest
from flax import nnx

# Calls of (Model, Block, Lin) in Flax 0.12.8 for the model below.
FLAX_CALLS = {
  'plain': (1, 2, 2),
  'flops': (1, 2, 2),
  'vjp_flops': (2, 4, 4),
  'both': (2, 4, 4),
}
KWARGS = {
  'plain': {},
  'flops': {'compute_flops': True},
  'vjp_flops': {'compute_vjp_flops': True},
  'both': {'compute_flops': True, 'compute_vjp_flops': True},
}


def _model(calls):
  class Lin(nnx.Module):
    def __init__(self, rngs):
      self.l = nnx.Linear(2, 2, rngs=rngs)

    def __call__(self, x):
      calls[2] += 1
      return self.l(x)

  class Block(nnx.Module):
    def __init__(self, rngs):
      self.l = Lin(rngs)
      self.bn = nnx.BatchNorm(2, rngs=rngs)

    def __call__(self, x):
      calls[1] += 1
      return self.bn(self.l(x))

  class Model(nnx.Module):
    def __init__(self, rngs):
      self.blocks = nnx.List([Block(rngs) for _ in range(2)])

    def __call__(self, x):
      calls[0] += 1
      for b in self.blocks:
        x = b(x)
      return x

  return Model(nnx.Rngs(0))


@pytest.mark.parametrize('mode', list(FLAX_CALLS))
def test_each_method_runs_as_in_flax(mode):
  calls = [0, 0, 0]
  model = _model(calls)
  table = nnx.tabulate(
    model, jnp.ones((4, 2)), console_kwargs={'width': 250}, **KWARGS[mode]
  )
  assert 'blocks/1/l/l' in table
  assert tuple(calls) == FLAX_CALLS[mode]


def test_flops_columns_with_state_updates():
  # BatchNorm in training mode updates its statistics: the flop estimates
  # cover the outputs only (values of Flax 0.12.8), and the model's own
  # state is left unchanged by tabulate.
  model = _model([0, 0, 0])
  table = nnx.tabulate(
    model,
    jnp.ones((4, 2)),
    compute_flops=True,
    compute_vjp_flops=True,
    console_kwargs={'width': 250},
  )
  rows = {}
  for line in table.splitlines():
    cells = [c.strip() for c in line.split('│')]
    if line.startswith('│') and (cells[1] or cells[2] == 'Model'):
      rows[cells[1]] = cells[5:7]
  assert rows[''] == ['196', '552']
  assert rows['blocks/0'] == ['98', '276']
  assert rows['blocks/0/l/l'] == ['40', '110']
  assert rows['blocks/1/bn'] == ['58', '166']
  assert float(model.blocks[0].bn.mean[...].sum()) == 0.0
