"""flax.nnx.traversals: flatten_mapping, flatten_to_sequence,
unflatten_mapping, empty_node."""

import report
from flax import nnx
from flax.nnx import traversals

xs = {'a': {'b': 1, 'c': {}}, 'd': 2}
report.text('flat', repr(traversals.flatten_mapping(xs)))
report.text(
  'keep-empty', repr(traversals.flatten_mapping(xs, keep_empty_nodes=True))
)
report.text('sep', repr(traversals.flatten_mapping(xs, sep='/')))
report.text(
  'is-leaf',
  repr(
    traversals.flatten_mapping(
      {'a': {'b': 1}, 'd': 2}, is_leaf=lambda p, x: p == ('a',)
    )
  ),
)
report.text(
  'sequence', repr(traversals.flatten_to_sequence({'b': {'x': 1}, 'a': 2}))
)
report.text(
  'unflatten',
  repr(
    traversals.unflatten_mapping(
      {('a', 'b'): 1, ('a', 'c'): traversals.empty_node}
    )
  ),
)
report.text(
  'unflatten-sep', repr(traversals.unflatten_mapping({'a/b': 1}, sep='/'))
)
report.text(
  'unflatten-pairs', repr(traversals.unflatten_mapping([(('a', 'b'), 1)]))
)
report.text(
  'state', repr(traversals.flatten_mapping(nnx.State({'a': {'b': 1}})))
)
report.value('struct', traversals.struct.__name__)
report.value('attr', nnx.traversals is traversals)
