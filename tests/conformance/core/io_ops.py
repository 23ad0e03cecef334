"""flax.io: file operations in the working directory."""

import os

import report
from flax import errors, io

io.makedirs('a/b')
report.value('isdir', [io.isdir('a/b'), io.exists('a/b'), io.isdir('a/c')])
with io.GFile('a/b/x.txt', 'w') as f:
  report.value('written', f.write('hello'))
with io.GFile('a/b/x.txt', 'rb') as f:
  report.value('read', f.read().decode())
report.value('getsize', io.getsize('a/b/x.txt'))
report.value('listdir', sorted(io.listdir('a/b')))
report.value('glob', sorted(io.glob('a/*/*.txt')))
with report.raises('copy onto itself'):
  io.copy('a/b/x.txt', 'a/b/x.txt')
io.copy('a/b/x.txt', 'a/b/y.txt')
with report.raises('copy exists'):
  io.copy('a/b/x.txt', 'a/b/y.txt')
io.copy('a/b/x.txt', 'a/b/y.txt', overwrite=True)
with report.raises('rename exists'):
  io.rename('a/b/x.txt', 'a/b/y.txt')
io.rename('a/b/x.txt', 'a/b/z.txt')
report.value('after rename', sorted(io.listdir('a/b')))
io.remove('a/b/z.txt')
with report.raises('remove missing'):
  io.remove('a/b/z.txt')
with report.raises('open missing'):
  io.GFile('a/b/none.txt', 'r')
io.rmtree('a')
report.value('gone', io.exists('a'))
report.value('modes', [m.name for m in io.BackendMode])
with io.override_mode(io.BackendMode.DEFAULT):
  report.value('mode', io.io_mode.name)
report.value('not found error', io.NotFoundError is FileNotFoundError)
report.value(
  'already exists', issubclass(errors.AlreadyExistsError, errors.FlaxError)
)
report.value('cwd empty', os.listdir('.'))
