"""flax.nnx.bridge is the only part of flax-nnx that imports Linen."""

import subprocess
import sys
import textwrap


def _run(code):
  return subprocess.run(
    [sys.executable, '-c', textwrap.dedent(code)],
    capture_output=True,
    text=True,
    check=False,
  )


def test_nnx_does_not_import_linen():
  result = _run("""
    import sys
    from flax import nnx
    nnx.Module, nnx.Rngs, nnx.jit
    print(sorted(m for m in sys.modules if m.startswith('flax.linen')))
    print('flax.nnx.bridge' in sys.modules)
  """)
  assert result.returncode == 0, result.stderr
  assert result.stdout.split() == ['[]', 'False']


def test_bridge_without_linen_names_the_extra():
  # Make flax.linen unimportable, as when flax-linen is not installed.
  result = _run("""
    import sys
    class Block:
      def find_spec(self, name, path=None, target=None):
        if name == 'flax.linen' or name.startswith('flax.linen.'):
          raise ModuleNotFoundError(f'No module named {name!r}', name=name)
        return None
    sys.meta_path.insert(0, Block())
    try:
      from flax.nnx import bridge
    except ModuleNotFoundError as e:
      print(type(e).__name__, e.name)
      print(str(e))
  """)
  assert result.returncode == 0, result.stderr
  first, message = result.stdout.split('\n', 1)
  assert first == 'ModuleNotFoundError flax.linen'
  assert "pip install 'flax-nnx[bridge]'" in message
