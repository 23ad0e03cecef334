"""flax.typing: HashableMapping, SizeBytes, In/Out, PytreeDeque."""

import jax
import jax.numpy as jnp
import numpy as np
import report
from flax import typing

h = typing.HashableMapping({'b': 1, 'a': 2})
report.text('repr', repr(h))
report.value(
  'eq/hash',
  [
    h == typing.HashableMapping({'a': 2, 'b': 1}),
    hash(h) == hash(typing.HashableMapping({'a': 2, 'b': 1})),
    h == {'a': 2, 'b': 1},
  ],
)
report.text('update', repr(h.update({'c': 3})))
report.text('size', repr(typing.SizeBytes.from_array(jnp.ones((2, 3)))))
tree = {'a': jnp.ones(4), 'b': np.ones(2, np.int8), 'c': 3}
report.text('size tree', repr(typing.SizeBytes.from_any(tree)))
report.text(
  'sizes', repr([typing.SizeBytes(1, 1500), typing.SizeBytes(1234567, 1)])
)
report.text('in out', repr((typing.In(0), typing.Out(1))))
q = typing.PytreeDeque([1, jnp.ones(2)])
report.text('deque treedef', str(jax.tree_util.tree_structure(q)))
report.value(
  'predicates',
  [
    typing.has_shape_dtype(jnp.ones(2)),
    typing.has_shape_dtype(3),
    typing.is_key_like('a'),
  ],
)
