"""Variable operators: arithmetic returns arrays, == compares values,
ordering and in-place operators are not supported, Variables are
unhashable."""

import operator

import jax.numpy as jnp
import report
from flax import nnx

v = nnx.Param(jnp.arange(3.0))
report.array('add', v + 2)
report.array('radd', 2 + v)
report.array('rsub', 2 - v)
report.array('rtruediv', 2 / v)
report.array('rpow', 2**v)
report.array('matmul', v @ v)
report.array('eq', v == 2)
report.array('eq-var', v == nnx.Param(jnp.arange(3.0)))
report.value('add-type', type(v + 2).__name__)
i = nnx.Param(jnp.arange(3))
report.array('and', i & 1)
report.array('lshift', i << 1)
report.array('invert', ~i)
report.array('neg', -i)
with report.raises('lt'):
  v < 1
with report.raises('ge'):
  1 >= v
with report.raises('hash'):
  hash(v)
with report.raises('iadd'):
  operator.iadd(v, 1)
with report.raises('bool-of-scalar'):
  bool(nnx.Param(jnp.array(1)))
report.value('contains', 0.0 in v)
report.value('call', nnx.Param(lambda x: x + 1)(1))
report.value('len', len(v))
report.value('index', [1, 2, 3][nnx.Param(jnp.array(1))])
v[...] += 1
report.array('setitem-inplace', v[...])
