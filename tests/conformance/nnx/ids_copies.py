"""flax.nnx.ids: copies and deep copies are fresh ids; pickling keeps the id."""

import copy
import pickle

import report
from flax.nnx import ids

a = ids.uuid()
shallow, deep = copy.copy(a), copy.deepcopy(a)
report.value('copies-differ', [shallow == a, deep == a, shallow == deep])
report.value(
  'copies-hash-differ', [hash(shallow) == hash(a), hash(deep) == hash(a)]
)
report.value('copies-newer', [shallow.id > a.id, deep.id > shallow.id])
report.value('pickled', pickle.loads(pickle.dumps(a)) == a)
report.value('id', [ids.UUID(7).id, hash(ids.UUID(7)), repr(ids.UUID(7))])
nested = copy.deepcopy({'x': a, 'y': a})
report.value('deepcopy-memo', [nested['x'] == a, nested['x'] == nested['y']])
