"""traverse_util: flatten/unflatten, path_aware_map, ModelParamTraversal."""

import jax.numpy as jnp
import report
from flax import traverse_util

tree = {'a': {'b': 1, 'c': {'d': 2}}, 'e': 3, 'f': {}}
flat = traverse_util.flatten_dict(tree)
report.value('flat-keys', [list(k) for k in flat])
report.value('flat-sep', sorted(traverse_util.flatten_dict(tree, sep='/')))
report.value(
  'flat-empty',
  [list(k) for k in traverse_util.flatten_dict(tree, keep_empty_nodes=True)],
)
report.value(
  'roundtrip',
  traverse_util.unflatten_dict(flat) == {'a': {'b': 1, 'c': {'d': 2}}, 'e': 3},
)
report.value(
  'unflatten-sep', traverse_util.unflatten_dict({'x/y': 1, 'x/z': 2}, sep='/')
)
params = {'dense': {'kernel': jnp.ones((2, 2)), 'bias': jnp.zeros(2)}}
mapped = traverse_util.path_aware_map(lambda path, x: x + len(path[-1]), params)
report.tree('path-aware-map', mapped)
decay = traverse_util.path_aware_map(
  lambda path, _: 'decay' if path[-1] == 'kernel' else 'none', params
)
report.value('labels', decay)
rows = [{'foo': 1, 'bar': 2}, {'foo': 3, 'bar': 4}]
merged = traverse_util.t_identity.each().merge(
  traverse_util.TraverseItem('foo'), traverse_util.TraverseItem('bar')
)
report.value('merge type', type(merged).__name__)
report.value('merge iterate', list(merged.iterate(rows)))
report.value('merge update', merged.update(lambda x: x * 10, rows))
report.value(
  'merge none', list(traverse_util.t_identity[0].merge().iterate(rows))
)
with report.warns('traversal deprecated'):
  traverse_util.TraverseItem('a')
with report.warns('chain deprecated'):
  traverse_util.t_identity.each().filter(bool)
