"""TensorBoard summaries (``flax.metrics.tensorboard``), written with
TensorFlow's ``tf.summary``: a :class:`SummaryWriter` needs TensorFlow
installed (``pip install tensorflow``).

>>> from flax.metrics import tensorboard  # doctest: +SKIP
>>> writer = tensorboard.SummaryWriter('/tmp/logs')  # doctest: +SKIP
>>> writer.scalar('loss', 0.5, step=1)  # doctest: +SKIP
"""

import importlib

import numpy as np


def _tensorflow():
  try:
    return importlib.import_module('tensorflow')
  except ModuleNotFoundError as e:
    if e.name != 'tensorflow':
      raise
    raise ModuleNotFoundError(
      'flax.metrics.tensorboard writes summaries with TensorFlow, which is '
      'not installed: pip install tensorflow',
      name='tensorflow',
    ) from None


def _flatten(prefix, tree, out):
  for key, value in tree.items():
    name = f'{prefix}.{key}' if prefix else str(key)
    if isinstance(value, dict):
      _flatten(name, value, out)
    else:
      out[name] = value
  return out


def _hparam_value(value):
  """A value TensorBoard's hparams plugin accepts (bool, number or str)."""
  if isinstance(value, (bool, int, float, str)):
    return value
  if isinstance(value, np.generic):
    return value.item()
  return str(value)


class SummaryWriter:
  """Writes summaries to a TensorBoard log directory.

  Args:
    log_dir: the directory the event files go to.
    auto_flush: flush after every summary written.
  """

  def __init__(self, log_dir, auto_flush=True):
    self._tf = _tensorflow()
    self._writer = self._tf.summary.create_file_writer(str(log_dir))
    self._auto_flush = auto_flush

  def _written(self):
    if self._auto_flush:
      self._writer.flush()

  def close(self):
    """Flushes and closes the event file."""
    self._writer.close()

  def flush(self):
    """Writes what is pending to disk."""
    self._writer.flush()

  def scalar(self, tag, value, step):
    """A scalar (a Python or array number) at ``step``."""
    value = float(np.array(value))
    with self._writer.as_default():
      self._tf.summary.scalar(name=tag, data=value, step=step)
    self._written()

  def image(self, tag, image, step, max_outputs=3):
    """Images: ``[height, width, channels]`` or a batch of them
    (``[N, height, width, channels]``); at most ``max_outputs`` of a batch
    are kept. Channels are 1 (grayscale), 3 (RGB) or 4 (RGBA)."""
    image = np.array(image)
    if image.ndim == 2:
      image = image[:, :, None]
    if image.ndim == 3:
      image = image[None]
    if image.shape[-1] == 1:
      image = np.repeat(image, 3, axis=-1)
    with self._writer.as_default():
      self._tf.summary.image(
        name=tag, data=image, step=step, max_outputs=max_outputs
      )
    self._written()

  def audio(self, tag, audiodata, step, sample_rate=44100, max_outputs=3):
    """Audio clips: ``[N, samples, channels]`` floats in [-1, 1] (values
    outside are clipped)."""
    audio = np.clip(np.array(audiodata), -1.0, 1.0)
    with self._writer.as_default():
      self._tf.summary.audio(
        name=tag,
        data=audio,
        sample_rate=sample_rate,
        step=step,
        max_outputs=max_outputs,
        encoding='wav',
      )
    self._written()

  def histogram(self, tag, values, step, bins=None):
    """A histogram of ``values`` (``bins``: their number; TensorBoard's
    default when None)."""
    values = np.array(values)
    with self._writer.as_default():
      self._tf.summary.histogram(name=tag, data=values, step=step, buckets=bins)
    self._written()

  def text(self, tag, textdata, step):
    """A text (markdown) summary."""
    if not isinstance(textdata, (str, bytes)):
      raise ValueError(
        f'`textdata` must be a str or bytes, got {type(textdata).__name__}.'
      )
    with self._writer.as_default():
      self._tf.summary.text(
        name=tag, data=self._tf.constant(textdata), step=step
      )
    self._written()

  def write(self, tag, tensor, step, metadata=None):
    """A raw tensor summary (``metadata``: a ``SummaryMetadata`` proto)."""
    with self._writer.as_default():
      self._tf.summary.write(
        tag=tag, tensor=tensor, step=step, metadata=metadata
      )
    self._written()

  def hparams(self, hparams):
    """Records hyperparameters (a possibly nested dict; nested keys are
    joined with dots) for TensorBoard's HParams dashboard."""
    hp = importlib.import_module('tensorboard.plugins.hparams.api')

    flat = {k: _hparam_value(v) for k, v in _flatten('', hparams, {}).items()}
    with self._writer.as_default():
      hp.hparams(flat)
    self._written()
