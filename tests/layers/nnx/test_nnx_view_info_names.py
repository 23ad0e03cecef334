"""nnx.view_info names each block by the qualified class name (sorted by
it) and shows the signature of an undocumented set_view."""

from flax import nnx


def _make_block():
  class Block(nnx.Module):
    def __init__(self):
      self.drop = nnx.Dropout(0.1, rngs=nnx.Rngs(0))

    def set_view(self, use_mode: bool | None = None):
      """Sets the view.

      Args:
        use_mode: whether to use the mode.
      """

  return Block()


class Top(nnx.Module):
  def __init__(self):
    self.b = _make_block()

  def set_view(self, flag: bool = False):
    pass


def test_local_class_qualname_and_undocumented_signature():
  assert nnx.view_info(Top()) == (
    'Dropout:\n'
    '  deterministic: bool | None = None\n'
    '    if True, disables dropout masking.\n'
    'Top:\n'
    '  set_view(self, flag: bool = False)\n'
    '_make_block.<locals>.Block:\n'
    '  use_mode: bool | None = None\n'
    '    whether to use the mode.'
  )
