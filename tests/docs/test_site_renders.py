"""The built documentation site renders in a headless browser.

Run by ``nox -s docs`` after ``mkdocs build``: the home page and an API
page are opened in headless Chromium, their rendered DOM must have the
page title, the site navigation and a code block, and a screenshot of each
must not be blank. ``FLAX_DOCS_SITE`` names the built site (default
``site/`` of the checkout); ``FLAX_DOCS_BROWSER`` the browser binary.
"""

import os
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SITE = pathlib.Path(os.environ.get('FLAX_DOCS_SITE', ROOT / 'site'))
BROWSERS = ('chromium', 'chromium-browser', 'google-chrome')

PAGES = {
  # page: (title, a code fragment one of its code blocks shows)
  'index.html': ('Modular Flax', 'nnx.Linear'),
  'api/nnx.html': ('flax.nnx - Modular Flax', '>>>'),
}


def _browser():
  given = os.environ.get('FLAX_DOCS_BROWSER')
  if given:
    return given
  for name in BROWSERS:
    found = shutil.which(name)
    if found:
      return found
  raise AssertionError(
    'No headless browser found (tried ' + ', '.join(BROWSERS) + '); '
    "`nox -s docs` installs Debian's chromium when it runs as root, "
    'or set FLAX_DOCS_BROWSER.'
  )


def _run_browser(*args):
  command = [
    _browser(),
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--hide-scrollbars',
    '--window-size=1280,900',
    '--virtual-time-budget=5000',
    *args,
  ]
  result = subprocess.run(command, capture_output=True, text=True, timeout=180)
  assert result.returncode == 0, result.stderr[-3000:]
  return result.stdout


def _text(html):
  import html as html_lib

  return html_lib.unescape(re.sub(r'<[^>]+>', '', html))


@pytest.fixture(scope='module', params=sorted(PAGES))
def page(request):
  path = SITE / request.param
  assert path.is_file(), f'{path} is missing: build the site first'
  return request.param, path


def test_page_renders(page):
  name, path = page
  title, code = PAGES[name]
  dom = _run_browser('--dump-dom', path.as_uri())
  assert re.search(rf'<title>{re.escape(title)}</title>', dom), dom[:500]
  # The navigation of the site, with links to the guides and the API pages.
  navs = re.findall(r'<nav class="md-nav[^"]*"[^>]*>(.*?)</nav>', dom, re.S)
  nav_text = ' '.join(_text(n) for n in navs)
  for entry in ('Quick start (NNX)', 'Checkpointing', 'flax.linen'):
    assert entry in nav_text, nav_text[:1000]
  assert 'href="' in ' '.join(navs)
  # A highlighted code block holding the expected code.
  blocks = re.findall(r'<pre[^>]*>(.*?)</pre>', dom, re.S)
  assert any(code in _text(b) for b in blocks), [b[:200] for b in blocks]
  assert 'class="highlight' in dom


def test_screenshot_is_not_blank(page, tmp_path):
  from PIL import Image

  name, path = page
  shot = tmp_path / 'shot.png'
  _run_browser(f'--screenshot={shot}', path.as_uri())
  image = Image.open(shot).convert('RGB')
  assert image.size == (1280, 900)
  colors = image.getcolors(maxcolors=1 << 20)
  # A page with text, a header bar and code has many colours, none of
  # which covers nearly everything.
  assert colors is not None and len(colors) > 50, len(colors or ())
  most = max(count for count, _ in colors)
  assert most < 0.95 * image.size[0] * image.size[1]
  # The header bar is drawn (not all white) and the body has dark text.
  top = image.crop((0, 0, 1280, 40)).convert('L')
  assert top.getextrema()[0] < 200
  body = image.crop((200, 80, 1000, 800)).convert('L')
  assert body.getextrema()[0] < 80
