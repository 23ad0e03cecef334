"""flax.nnx.ids: importable as a submodule, not exported by flax.nnx."""

import copy
import pickle
import subprocess
import sys
import textwrap

from flax.nnx import ids


def test_ids_is_not_an_nnx_export_and_uuid_hash():
  code = textwrap.dedent(
    """
    from flax import nnx
    assert not hasattr(nnx, 'ids') and 'ids' not in dir(nnx)
    from flax.nnx import ids
    u = ids.UUID(1)
    assert hash(u) == 1 and hash(ids.UUID(7)) == 7
    assert u == ids.UUID(1) and u != 1 and {u: 'x'}[ids.UUID(1)] == 'x'
    assert repr(u) == 'UUID(1)'
    """
  )
  # A fresh interpreter: another test may have imported flax.nnx.ids.
  subprocess.run([sys.executable, '-c', code], check=True)


def test_copied_uuid_is_a_fresh_id_and_pickle_keeps_it():
  a = ids.uuid()
  shallow, deep = copy.copy(a), copy.deepcopy(a)
  assert shallow != a and deep != a and shallow != deep
  assert len({hash(a), hash(shallow), hash(deep)}) == 3
  assert a.id < shallow.id < deep.id
  assert pickle.loads(pickle.dumps(a)) == a
