"""Runs the docs' first examples in environments holding only some packages.

Run by ``nox -s isolation`` as ``python isolation_combos.py linen`` (with
flax-core, flax-linen and flax-layers installed) or ``... nnx`` (with
flax-core, flax-nnx and flax-layers installed).
"""

import sys
import warnings


def linen_basic_mlp():
  """The "Basic usage" MLP of the Linen docs."""
  import jax.numpy as jnp
  from jax.random import PRNGKey

  from flax import linen as nn

  class MLP(nn.Module):
    out_dims: int

    @nn.compact
    def __call__(self, x):
      x = x.reshape((x.shape[0], -1))
      x = nn.Dense(128)(x)
      x = nn.relu(x)
      x = nn.Dense(self.out_dims)(x)
      return x

  model = MLP(out_dims=10)
  x = jnp.empty((4, 28, 28, 1))
  variables = model.init(PRNGKey(42), x)
  y = model.apply(variables, x)
  assert y.shape == (4, 10), y.shape
  shapes = {k: v['kernel'].shape for k, v in variables['params'].items()}
  assert shapes == {'Dense_0': (784, 128), 'Dense_1': (128, 10)}, shapes
  return {'flax.nnx', 'optax', 'orbax'}


def nnx_module_example():
  """The Module example of the NNX docs."""
  import jax.numpy as jnp

  from flax import nnx

  class Model(nnx.Module):
    def __init__(self, rngs):
      self.linear1 = nnx.Linear(2, 3, rngs=rngs)
      self.linear2 = nnx.Linear(3, 4, rngs=rngs)

    def __call__(self, x):
      x = self.linear1(x)
      x = nnx.relu(x)
      x = self.linear2(x)
      return x

  x = jnp.ones((1, 2))
  model = Model(rngs=nnx.Rngs(0))
  y = model(x)
  assert y.shape == (1, 4), y.shape
  return {'flax.linen', 'optax', 'orbax'}


def main():
  warnings.simplefilter('error')
  run = {'linen': linen_basic_mlp, 'nnx': nnx_module_example}[sys.argv[1]]
  forbidden = run()
  bad = sorted(forbidden & set(sys.modules))
  assert not bad, f'the {sys.argv[1]} example imported {bad}'
  print(f'{run.__doc__.strip()[:-1]} ran with only the {sys.argv[1]} packages.')


if __name__ == '__main__':
  main()
