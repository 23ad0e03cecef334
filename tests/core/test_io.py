"""flax.io: file operations on the local file system."""

import doctest
import os

import pytest

from flax import errors, io


def test_doctests():
  assert doctest.testmod(io).failed == 0


def test_file_operations(tmp_path):
  d = str(tmp_path)
  p = os.path.join(d, 'a', 'b')
  assert io.makedirs(p) is None
  assert io.isdir(p) and io.exists(p)
  assert io.makedirs(p) is None  # existing directories are fine
  f = os.path.join(p, 'x.txt')
  with io.GFile(f, 'w') as fh:
    assert fh.write('hello') == 5
  with io.GFile(f, 'rb') as fh:
    assert fh.read() == b'hello'
  assert io.getsize(f) == 5
  assert io.listdir(p) == ['x.txt']
  found = io.glob(os.path.join(d, '*', '*', '*.txt'))
  assert [os.path.relpath(x, d) for x in found] == ['a/b/x.txt']

  with pytest.raises(errors.AlreadyExistsError, match='overwrite an existing'):
    io.copy(f, f)
  assert io.copy(f, f + '2') is None
  with pytest.raises(errors.AlreadyExistsError):
    io.copy(f, f + '2')
  io.copy(f, f + '2', overwrite=True)
  with pytest.raises(errors.AlreadyExistsError):
    io.rename(f, f + '2')
  assert io.rename(f, f + '3') is None
  assert not io.exists(f) and io.exists(f + '3')
  io.rename(f + '3', f + '2', overwrite=True)
  assert io.listdir(p) == ['x.txt2']
  assert io.remove(f + '2') is None
  assert io.listdir(p) == []

  for op in (io.remove, io.getsize, io.listdir, lambda x: io.GFile(x, 'r')):
    with pytest.raises(io.NotFoundError):
      op(f + '9')
  assert io.rmtree(os.path.join(d, 'a')) is None
  assert not io.exists(p) and not io.isdir(f)
  with pytest.raises(FileNotFoundError):
    io.rmtree(os.path.join(d, 'a'))


def test_modes():
  assert list(io.BackendMode) == [io.BackendMode.DEFAULT, io.BackendMode.TF]
  assert io.io_mode is io.BackendMode.DEFAULT
  with io.override_mode(io.BackendMode.TF):
    assert io.io_mode is io.BackendMode.TF
  assert io.io_mode is io.BackendMode.DEFAULT
  try:
    io.set_mode('x')
    with pytest.raises(ValueError, match='Unknown IO Backend Mode'):
      io.exists('.')
  finally:
    io.set_mode(io.BackendMode.DEFAULT)
  assert io.io_mode is io.BackendMode.DEFAULT
  assert io.NotFoundError is FileNotFoundError


def test_flax_root_offers_io():
  import flax

  assert flax.io is io
  assert 'io' in dir(flax)
