"""flax.metrics.tensorboard: the writer forwards each summary to
TensorFlow's tf.summary (checked against a recording stand-in for
TensorFlow, which is not a dependency)."""

import contextlib
import sys
import types

import numpy as np
import pytest

import flax.metrics
from flax.metrics import tensorboard


class _Recorder:
  def __init__(self):
    self.calls = []

  def __getattr__(self, name):
    def record(*args, **kwargs):
      self.calls.append((name, args, kwargs))

    return record


class _FileWriter:
  def __init__(self, log_dir, calls):
    self.log_dir = log_dir
    self.calls = calls

  def flush(self):
    self.calls.append(('flush', (), {}))

  def close(self):
    self.calls.append(('close', (), {}))

  @contextlib.contextmanager
  def as_default(self):
    self.calls.append(('as_default', (), {}))
    yield


@pytest.fixture
def fake_tf(monkeypatch):
  summary = _Recorder()
  tf = types.ModuleType('tensorflow')
  tf.summary = summary
  tf.constant = lambda x: ('constant', x)
  summary.create_file_writer = lambda d: _FileWriter(d, summary.calls)
  monkeypatch.setitem(sys.modules, 'tensorflow', tf)
  api = types.ModuleType('tensorboard.plugins.hparams.api')
  api.hparams = lambda values: summary.calls.append(('hparams', (values,), {}))
  monkeypatch.setitem(sys.modules, 'tensorboard.plugins.hparams.api', api)
  return summary


def _summaries(calls):
  return [c for c in calls if c[0] not in ('as_default', 'flush')]


def test_flax_metrics_is_a_package():
  assert flax.metrics.__name__ == 'flax.metrics'


def test_without_tensorflow_the_writer_says_what_to_install(monkeypatch):
  monkeypatch.setitem(sys.modules, 'tensorflow', None)
  with pytest.raises(ModuleNotFoundError, match='pip install tensorflow'):
    tensorboard.SummaryWriter('/tmp/logs')


def test_scalar_image_histogram_text(fake_tf, tmp_path):
  w = tensorboard.SummaryWriter(tmp_path)
  w.scalar('loss', np.float32(0.5), step=3)
  w.image('img', np.zeros((4, 5, 1)), step=1)
  w.histogram('h', [1, 2, 3], step=2, bins=4)
  w.text('t', 'hello', step=5)
  got = _summaries(fake_tf.calls)
  assert got[0] == ('scalar', (), {'name': 'loss', 'data': 0.5, 'step': 3})
  name, _, kw = got[1]
  # one grayscale image becomes a batch of one RGB image
  assert name == 'image' and kw['data'].shape == (1, 4, 5, 3)
  assert kw['max_outputs'] == 3 and kw['step'] == 1
  assert got[2][0] == 'histogram' and got[2][2]['buckets'] == 4
  assert got[3] == (
    'text',
    (),
    {'name': 't', 'data': ('constant', 'hello'), 'step': 5},
  )
  # auto_flush: a flush after each summary
  assert [c[0] for c in fake_tf.calls].count('flush') == 4
  with pytest.raises(ValueError, match='str or bytes'):
    w.text('t', 3, step=1)


def test_audio_clipped_and_hparams_flattened(fake_tf, tmp_path):
  w = tensorboard.SummaryWriter(tmp_path, auto_flush=False)
  w.audio('a', np.array([[[2.0], [-3.0], [0.5]]]), step=0, sample_rate=8000)
  w.hparams({'lr': np.float32(0.5), 'model': {'depth': 3, 'act': 'relu'}})
  w.close()
  audio, hparams, close = _summaries(fake_tf.calls)
  assert audio[2]['data'].ravel().tolist() == [1.0, -1.0, 0.5]
  assert audio[2]['sample_rate'] == 8000 and audio[2]['encoding'] == 'wav'
  assert hparams[1][0] == {'lr': 0.5, 'model.depth': 3, 'model.act': 'relu'}
  assert close[0] == 'close'
  assert 'flush' not in [c[0] for c in fake_tf.calls]
