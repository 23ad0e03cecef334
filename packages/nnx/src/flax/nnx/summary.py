"""``nnx.display``: print NNX objects."""


def display(*args):
  """Prints each argument (Modules, States, Variables) with its repr.

  >>> from flax import nnx
  >>> nnx.display(nnx.State({}))
  State({})
  """
  for x in args:
    print(repr(x))
