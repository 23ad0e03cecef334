"""The Python examples of the documentation pages run and print what they say.

Each page's ``python`` code blocks run in order, as one program, in a fresh
interpreter with Flax's CI settings. A ``print(...)  # text`` line must
print ``text``. Pages whose examples need more than one process say so with
``<!-- examples: not run ... -->`` and are skipped by name below, not
silently.
"""

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / 'docs'
# Pages whose examples cannot run in one process on one machine.
NOT_RUN = {'multihost.md': 'needs several processes (nox -s multihost)'}

PAGES = sorted(
  str(p.relative_to(DOCS))
  for p in DOCS.rglob('*.md')
  if '```python' in p.read_text()
)


def page_program(text):
  """The page's Python blocks, each ``print(x)  # out`` checked."""
  blocks = re.findall(r'^```python\n(.*?)^```', text, re.S | re.M)
  lines = []
  for line in '\n'.join(blocks).splitlines():
    match = re.fullmatch(r'(\s*)print\((.*)\)  # (.*)', line)
    if match:
      indent, expr, expected = match.groups()
      lines.append(f'{indent}_check({expr}, {expected!r})')
    else:
      lines.append(line)
  header = textwrap.dedent("""
    def _check(value, expected):
      assert str(value) == expected, (str(value), expected)
  """)
  return header + '\n'.join(lines) + '\n'


def test_pages_with_examples_are_found():
  assert 'quickstart-nnx.md' in PAGES and 'quickstart-linen.md' in PAGES
  assert set(NOT_RUN) <= set(PAGES)


@pytest.mark.parametrize('page', PAGES)
def test_page_examples_run(page, tmp_path):
  if page in NOT_RUN:
    text = (DOCS / page).read_text()
    assert '<!-- examples: not run' in text
    return
  program = tmp_path / 'page.py'
  program.write_text(page_program((DOCS / page).read_text()))
  env = {
    **os.environ,
    'JAX_PLATFORMS': 'cpu',
    'JAX_NUMPY_RANK_PROMOTION': 'raise',
    'XLA_FLAGS': '--xla_force_host_platform_device_count=8',
  }
  result = subprocess.run(
    [sys.executable, '-W', 'error', str(program)],
    cwd=tmp_path,
    capture_output=True,
    text=True,
    env=env,
  )
  assert result.returncode == 0, result.stderr[-4000:]
