"""Key order of copies: unfreeze, copy and pop of dicts and FrozenDicts,
and of Linen variables."""

import jax
import jax.numpy as jnp
import report
from flax import core
from flax import linen as nn
from flax.core import FrozenDict


def order(t):
  return [
    [k, order(v)] if isinstance(v, (dict, FrozenDict)) else k
    for k, v in t.items()
  ]


def make():
  return {'b': {'z': 1, 'a': 2}, 'a': 3, 'c': {'y': {'q': 1, 'p': 2}}}


for kind, build in (('dict', make), ('frozen', lambda: FrozenDict(make()))):
  report.value(f'{kind} unfreeze', order(core.unfreeze(build())))
  report.value(f'{kind} freeze', order(core.freeze(build())))
  report.value(f'{kind} copy', order(core.copy(build(), {'x': 1})))
  report.value(f'{kind} copy empty', order(core.copy(build())))
  rest, value = core.pop(build(), 'c')
  report.value(f'{kind} pop', [order(rest), order(value)])
  report.value(f'{kind} tree_map', order(jax.tree.map(lambda v: v, build())))
report.value('method unfreeze', order(FrozenDict(make()).unfreeze()))
report.value(
  'method copy', order(FrozenDict(make()).copy({'x': {'w': 0, 'v': 1}}))
)
report.value(
  'nested frozen', order(core.unfreeze({'n': FrozenDict({'z': 1, 'a': 2})}))
)
with report.raises('unsortable keys'):
  core.pop({1: 'a', 'b': 2}, 'b')


class Model(nn.Module):
  @nn.compact
  def __call__(self, x, train=True):
    x = nn.Dense(3)(x)
    x = nn.BatchNorm(use_running_average=not train)(x)
    self.variable('zcol', 'v', lambda: 1.0)
    self.sow('intermediates', 'h', x)
    return nn.Dense(2, name='a_dense')(x)


x = jnp.ones((2, 4))
variables = Model().init(jax.random.key(0), x)
report.value('init', order(variables))
rest, params = core.pop(variables, 'params')
report.value('pop params', [order(rest), order(params)])
frozen = core.freeze(variables)
rest, params = core.pop(frozen, 'params')
report.value('pop frozen params', [order(rest), order(params)])
for mutable in (
  True,
  ['batch_stats', 'intermediates'],
  ['params', 'batch_stats'],
):
  _, updates = Model().apply(variables, x, mutable=mutable)
  report.value(f'apply {mutable}', order(updates))
  _, updates = Model().apply(frozen, x, mutable=mutable)
  report.value(f'apply frozen {mutable}', order(updates))
report.value('bound', order(Model().bind(frozen).variables))
