"""NumPy scalars and arrays as operands of a Variable's operators: the
result is a JAX array (float32), eagerly and under jax.jit / jax.vmap; the
operators call the value's methods; in-place operators are refused."""

import jax
import jax.numpy as jnp
import numpy as np
import report
from flax import nnx


def kind(x):
  return [type(x).__name__, str(getattr(x, 'dtype', ''))]


for hijax in (False, True):
  p = nnx.Param(jnp.arange(3.0), hijax=hijax)
  report.array(f'np.log * p hijax={hijax}', np.log(2.0) * p)
  report.value(f'kind np.log * p hijax={hijax}', kind(np.log(2.0) * p))
  report.value(f'kind np.float32 + p hijax={hijax}', kind(np.float32(2) + p))
  report.value(f'kind np array * p hijax={hijax}', kind(np.ones(3) * p))
  report.value(f'kind np array @ p hijax={hijax}', kind(np.ones(3) @ p))
  report.value(f'kind p - np array hijax={hijax}', kind(p - np.ones(3)))
  report.value(
    f'round hijax={hijax}', kind(round(nnx.Param(jnp.array(1.5), hijax=hijax)))
  )
  with report.raises(f'less than hijax={hijax}'):
    p < 1
  with report.raises(f'in-place hijax={hijax}'):
    p += 1
  try:
    p *= 2
  except NotImplementedError as e:
    report.text(f'in-place first line hijax={hijax}', str(e).split('\n')[0])

p = nnx.Param(jnp.arange(3.0))
report.array('jit', jax.jit(lambda p: np.log(2.0) * p)(p))
report.array('jit np array', jax.jit(lambda p: np.ones(3) + p)(p))
report.array('vmap', jax.vmap(lambda p: np.float32(3) * p)(p))
report.tree('grad', jax.grad(lambda p: (np.float32(3) * p).sum())(p))
report.value('np.asarray', kind(np.asarray(p)))
report.value('np.add ufunc', kind(np.add(np.ones(3), p)))
report.value(
  'np.asarray of a float Variable', kind(np.asarray(nnx.Variable(3.0)))
)
report.value('priority', getattr(p, '__array_priority__', None))
report.value(
  'float priority', getattr(nnx.Variable(3.0), '__array_priority__', None)
)
V = nnx.Variable
report.value('float * float var', [V(2.0) * V(3), np.float32(2) * V(3.0)])
report.value('round float var', [round(V(2.5)), round(V(2.567), 2)])
report.value('eq', [V(2) == 2.0, V(2) != 2.0, V(2.0) == V(2)])
for label, fn in [
  ('float * int var', lambda: 2.0 * V(3)),
  ('int var * float', lambda: V(3) * 2.0),
  ('int var @ int var', lambda: V(2) @ V(3)),
  ('divmod plain', lambda: divmod(V(jnp.ones(2)), 2)),
  ('var + None', lambda: V(jnp.ones(2)) + None),
]:
  with report.raises(label):
    fn()
q = nnx.Param(jnp.arange(3.0), hijax=True)
report.tree('divmod hijax', divmod(q, 2))
report.tree('divmod hijax jit', jax.jit(lambda q: divmod(2, q))(q))
