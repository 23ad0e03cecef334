"""Griffe extensions of the documentation build.

``DoctestFences``: doctests become code blocks.

Docstrings hold ``>>>`` examples in their prose (module and class
overviews) as well as in ``Examples:`` sections. Markdown would read the
prose ones as text (``x['a'][0]`` turns into a link), so each run of
``>>>`` lines and their output is wrapped in a ``pycon`` fence before the
docstring is parsed.

``DoctestFences`` also splits an ``Args:`` entry that documents several
parameters at once (``bias, mask, dropout_rate: see ...``) into one entry
per parameter, which the Google-style parser then reads.

``ReExports``: ``from flax.nnx.graphlib import split as split`` in a
package's ``__init__`` is how the packages declare their public names (the
redundant alias marks a re-export), so such aliases are documented with the
package.

Both are configured in mkdocs.yml under the Python handler's
``extensions``.
"""

import re

import griffe

FENCE = '```'


def fence_doctests(text: str) -> str:
  r"""Wraps each run of doctest lines of ``text`` in a ``pycon`` fence.

  >>> text = 'Text.\n\n' + '>' * 3 + ' 1 + 1\n2\n\nMore.'
  >>> fence_doctests(text).splitlines()
  ['Text.', '', '```pycon', '>>> 1 + 1', '2', '```', '', 'More.']
  """
  out, in_fence, in_example, indent = [], False, False, ''
  for line in text.splitlines():
    stripped = line.strip()
    if in_example and (not stripped or stripped.startswith(FENCE)):
      out.append(f'{indent}{FENCE}')
      in_example = False
    if stripped.startswith(FENCE) and not in_example:
      in_fence = not in_fence
    elif not in_fence and not in_example and stripped.startswith('>>>'):
      indent = line[: len(line) - len(line.lstrip())]
      out.append(f'{indent}{FENCE}pycon')
      in_example = True
    out.append(line)
  if in_example:
    out.append(f'{indent}{FENCE}')
  return '\n'.join(out)


_ARGS = re.compile(r'(\s*)(Args|Arguments|Parameters):\s*$')
_ARGS_ANYWHERE = re.compile(r'^\s*(Args|Arguments|Parameters):\s*$', re.M)
_NAMES = re.compile(r'\*{0,2}\w+\s*,')


def split_shared_args(text: str) -> str:
  r"""Gives each parameter of a shared ``Args:`` entry its own entry.

  >>> text = 'Args:\n  a, b,\n    c: as above.\n  d: own.'
  >>> print(split_shared_args(text))
  Args:
    a: as above.
    b: as above.
    c: as above.
    d: own.
  """
  lines = text.splitlines()
  out, i = [], 0
  while i < len(lines):
    line = lines[i]
    out.append(line)
    i += 1
    header = _ARGS.fullmatch(line)
    if not header:
      continue
    section = len(header.group(1))
    while i < len(lines) and lines[i].strip():
      entry = lines[i]
      indent = len(entry) - len(entry.lstrip())
      if indent <= section:
        break
      j = i + 1
      while j < len(lines) and lines[j].strip():
        if len(lines[j]) - len(lines[j].lstrip()) <= indent:
          break
        j += 1
      block = ' '.join(x.strip() for x in lines[i:j])
      names, sep, description = block.partition(':')
      if _NAMES.match(entry.strip()) and sep:
        for name in names.split(','):
          if name.strip():
            out.append(f'{" " * indent}{name.strip()}: {description.strip()}')
      else:
        out.extend(lines[i:j])
      i = j
  return '\n'.join(out)


class DoctestFences(griffe.Extension):
  """Fences doctests and splits shared ``Args:`` entries of docstrings."""

  def on_instance(self, *, obj, **kwargs):
    docstring = obj.docstring
    if docstring is None:
      return
    value = docstring.value
    if '>>>' in value:
      value = fence_doctests(value)
    if ',' in value and _ARGS_ANYWHERE.search(value):
      value = split_shared_args(value)
    docstring.value = value


class ReExports(griffe.Extension):
  """Marks ``import name as name`` re-exports of a package as public."""

  def on_alias(self, *, alias, **kwargs):
    parent = alias.parent
    if (
      parent is not None
      and parent.is_init_module
      and alias.name == alias.target_path.rsplit('.', 1)[-1]
      and not alias.name.startswith('_')
    ):
      alias.public = True
