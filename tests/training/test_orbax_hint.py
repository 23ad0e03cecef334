"""Without orbax-checkpoint, the Orbax backend names the extra to install."""

import subprocess
import sys
import textwrap


def test_missing_orbax_names_the_install_command():
  code = textwrap.dedent("""
    import sys

    class Block:
      def find_spec(self, name, path=None, target=None):
        if name == 'orbax' or name.startswith('orbax.'):
          raise ModuleNotFoundError(f'No module named {name!r}', name=name)
        return None

    sys.meta_path.insert(0, Block())
    from flax.plugins._install import install_command
    from flax.training import _orbax
    try:
      _orbax.ocp()
    except ImportError as e:
      print(install_command('flax-training', ('orbax',)))
      print(e)
  """)
  result = subprocess.run(
    [sys.executable, '-c', code], capture_output=True, text=True, check=False
  )
  assert result.returncode == 0, result.stderr
  command, message = result.stdout.rstrip('\n').split('\n')
  assert 'orbax extra of flax-training' in message
  assert f'`{command}`' in message
  assert command.startswith('pip install ') and 'training' in command
  assert '[orbax]' in command
