"""Modules held by dataclass fields of a one-field Module are adopted."""

import jax
import jax.numpy as jnp

from flax import linen as nn


class Lin(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    w = self.param('w', jax.nn.initializers.ones, (x.shape[-1], self.features))
    return x @ w


class Stack(nn.Module):
  layers: list

  def __call__(self, x):
    for layer in self.layers:
      x = layer(x)
    return x


class Blocks(nn.Module):
  blocks: dict

  def __call__(self, x):
    assert isinstance(self.blocks, nn.FrozenDict)
    return self.blocks['b'](self.blocks['a'](x))


class Holder(nn.Module):
  cfg: object

  @nn.compact
  def __call__(self, x):
    assert self.cfg is CFG
    return Lin(2)(x)


CFG = object()
X = jnp.ones((1, 2))


def shapes(variables):
  return jax.tree_util.tree_map(jnp.shape, variables)


def test_list_field_is_adopted_and_frozen():
  v = Stack([Lin(3), Lin(2)]).init(jax.random.key(0), X)
  assert shapes(v) == {
    'params': {'layers_0': {'w': (2, 3)}, 'layers_1': {'w': (3, 2)}}
  }
  assert isinstance(Stack([Lin(3), Lin(2)]).bind(v).layers, tuple)


def test_dict_field_is_adopted_and_frozen():
  v = Blocks({'a': Lin(3), 'b': Lin(1)}).init(jax.random.key(0), X)
  assert shapes(v) == {
    'params': {'blocks_a': {'w': (2, 3)}, 'blocks_b': {'w': (3, 1)}}
  }


def test_plain_field_value_is_kept_as_is():
  v = Holder(CFG).init(jax.random.key(0), X)
  assert shapes(v) == {'params': {'Lin_0': {'w': (2, 2)}}}
