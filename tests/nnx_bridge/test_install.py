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
    from flax.plugins._install import install_command
    print(install_command('flax-nnx', ('bridge',)))
  """)
  assert result.returncode == 0, result.stderr
  first, message, command = result.stdout.rstrip('\n').split('\n')
  assert first == 'ModuleNotFoundError flax.linen'
  assert 'Install the bridge extra' in message
  assert message.endswith(command)
  # Installed from a checkout, the command names its package folders.
  assert command.startswith('pip install ')
  assert 'nnx[bridge]' in command


def test_nnx_wrappers_is_the_bridge_wrappers_module():
  result = _run("""
    import sys
    from flax import nnx
    print('flax.linen' in sys.modules)
    import flax.nnx.bridge.wrappers
    print(nnx.wrappers is flax.nnx.bridge.wrappers)
    print(nnx.wrappers.ToNNX is nnx.bridge.ToNNX)
  """)
  assert result.returncode == 0, result.stderr
  assert result.stdout.split() == ['False', 'True', 'True']
