"""nnx.view_info as Flax 0.12.8 prints it: blocks named by the qualified
class name (local classes included), annotations and defaults as ``str``
shows them, ``**extra`` listed but parameters named ``args`` / ``kwargs``
left out, every keyword documented."""

import typing as tp

import jax.numpy as jnp
import pytest
from flax import nnx


def _make():
  class Local(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(2))
      self.inner = Holder.Nested()

    def set_view(self, deterministic=None, mode: tp.Literal['a', 'b'] = 'a'):
      """Sets the view.

      Args:
        deterministic: whether to be deterministic.
        mode: the mode.
      """

  class Holder:
    class Nested(nnx.Module):
      def set_view(self, *args, flag: bool = False, **extra):
        """Sets.

        Args:
          args: not listed.
          flag: a flag
            on two lines.
          extra: other switches.
        """

  return Local


class Outer:
  class Inner(nnx.Module):
    def set_view(self, use: bool | None = None, scale: float = 1.5):
      """Sets.

      Args:
        use: whether to use it.
        scale: a scale.
      """


def test_local_and_nested_class_names():
  assert nnx.view_info(_make()()) == (
    '_make.<locals>.Holder.Nested:\n'
    "  flag: <class 'bool'> = False\n"
    '    a flag\n'
    '    on two lines.\n'
    "  extra: <class 'inspect._empty'>\n"
    '    other switches.\n'
    '_make.<locals>.Local:\n'
    "  deterministic: <class 'inspect._empty'> = None\n"
    '    whether to be deterministic.\n'
    "  mode: typing.Literal['a', 'b'] = a\n"
    '    the mode.'
  )


def test_class_in_a_class():
  assert nnx.view_info(Outer.Inner()) == (
    'Outer.Inner:\n'
    '  use: bool | None = None\n'
    '    whether to use it.\n'
    "  scale: <class 'float'> = 1.5\n"
    '    a scale.'
  )


def test_undocumented_keyword_is_a_key_error():
  class Partial(nnx.Module):
    def set_view(self, flag: bool = False, other: int = 3):
      """Sets.

      Args:
        flag: a flag.
      """

  with pytest.raises(KeyError, match='other'):
    nnx.view_info(Partial())

  class ArgsOnFirstLine(nnx.Module):
    def set_view(self, flag: bool = False):
      """Args:
      flag: not an entry of the section (not indented under it).
      """

  with pytest.raises(KeyError, match='flag'):
    nnx.view_info(ArgsOnFirstLine())


def test_undocumented_set_view_shows_its_signature():
  class Bare(nnx.Module):
    def set_view(self, flag: bool = False):
      pass

  assert nnx.view_info(Bare()) == (
    'test_undocumented_set_view_shows_its_signature.<locals>.Bare:\n'
    '  set_view(self, flag: bool = False)'
  )


def test_parameters_named_args_and_kwargs_are_left_out():
  class Named(nnx.Module):
    def set_view(self, args=1, flag: bool = False, **kwargs):
      """Sets.

      Args:
        flag: a flag.
        kwargs: documented, still left out.
      """

  assert nnx.view_info(Named()) == (
    'test_parameters_named_args_and_kwargs_are_left_out.<locals>.Named:\n'
    "  flag: <class 'bool'> = False\n"
    '    a flag.'
  )

  class Rest(nnx.Module):
    def set_view(self, *rest, flag: bool = False):
      """Sets.

      Args:
        flag: a flag.
      """

  # skipped by name, not by kind: ``*rest`` is a keyword to document
  with pytest.raises(KeyError, match='rest'):
    nnx.view_info(Rest())
