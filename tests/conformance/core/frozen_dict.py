"""FrozenDict: construction, copy/pop/unfreeze, repr and errors."""

import jax.numpy as jnp
import report
from flax.core import frozen_dict
from flax.core import FrozenDict, freeze, unfreeze

fd = freeze({'a': {'b': jnp.ones(2), 'c': 3}, 'd': 'x'})
report.text('repr', repr(fd))
report.value('keys', list(fd.keys()))
copied = fd.copy({'e': 5})
report.value('copy-keys', sorted(copied.keys()))
rest, popped = fd.pop('d')
report.value('popped', popped)
report.value('rest-keys', list(rest.keys()))
report.value('unfrozen-type', type(unfreeze(fd)).__name__)
report.value('pretty', frozen_dict.pretty_repr({'a': {'b': 1}}))
report.value('hash-equal', hash(freeze({'x': 1})) == hash(freeze({'x': 1})))
with report.raises('setitem'):
  fd['a'] = 1
with report.raises('missing-key'):
  fd['zzz']
report.value('eq', FrozenDict({'a': 1}) == FrozenDict({'a': 1}))
