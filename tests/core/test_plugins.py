"""Tests of the plugin registry, lazy namespaces and backend selection."""

import io
import subprocess
import sys
import textwrap
import threading
import types

import pytest

from flax import configurations
from flax import plugins
from flax.plugins import __main__ as plugins_main

_counter = iter(range(10**6))


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
  monkeypatch.delenv('FLAX_DISABLE_PLUGINS', raising=False)
  monkeypatch.delenv('FLAX_PLUGINS_STRICT', raising=False)
  plugins.reset()
  yield
  plugins.reset()


@pytest.fixture
def make_dist(tmp_path, monkeypatch):
  """Writes a fake installed distribution with a `flax` entry point."""
  monkeypatch.syspath_prepend(str(tmp_path))

  def make(dist, plugin_source, modules=None, version='1.0'):
    uid = next(_counter)
    plugin_module = f'fake_plugin_{uid}'
    info = tmp_path / f'{dist.replace("-", "_")}-{version}.dist-info'
    info.mkdir()
    (info / 'METADATA').write_text(
      f'Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n'
    )
    (info / 'entry_points.txt').write_text(
      f'[flax]\n{dist} = {plugin_module}\n'
    )
    (tmp_path / f'{plugin_module}.py').write_text(
      textwrap.dedent(plugin_source)
    )
    for name, source in (modules or {}).items():
      (tmp_path / f'{name}.py').write_text(textwrap.dedent(source))
    return plugin_module

  return make


@pytest.fixture
def namespace(monkeypatch):
  """A fresh module extended through the registry, like flax.nnx."""
  name = f'fake_ns_{next(_counter)}'
  module = types.ModuleType(name)
  module.Own = 'first-party value'
  monkeypatch.setitem(sys.modules, name, module)
  module.__getattr__, module.__dir__ = plugins.lazy_namespace(
    name, hints={'Known': 'flax-not-installed-dist'}
  )
  return module


EXPORT_PLUGIN = """
from flax import plugins

@plugins.hookimpl
def flax_exports():
  return [plugins.Export({ns!r}, {name!r}, {target!r})]
"""


def export_plugin(ns, name, target):
  return EXPORT_PLUGIN.format(ns=ns, name=name, target=target)


def test_export_resolves_once_and_is_cached(make_dist, namespace):
  make_dist(
    'good-layers',
    export_plugin(namespace.__name__, 'Fancy', 'good_impl:Fancy'),
    {'good_impl': 'class Fancy:\n  features = 3\n'},
  )
  assert namespace.Fancy.features == 3
  # Cached in the module itself: no registry lookup on later accesses.
  assert 'Fancy' in vars(namespace)
  assert 'Fancy' in dir(namespace)
  from good_impl import Fancy

  assert namespace.Fancy is Fancy


def test_from_import_of_plugin_name(make_dist, namespace):
  make_dist(
    'good-layers2',
    export_plugin(namespace.__name__, 'Thing', 'good_impl2:Thing'),
    {'good_impl2': 'Thing = 42\n'},
  )
  scope = {}
  exec(f'from {namespace.__name__} import Thing', scope)
  assert scope['Thing'] == 42


def test_whole_module_export(make_dist, namespace):
  make_dist(
    'module-exporter',
    export_plugin(namespace.__name__, 'metrics', 'metrics_impl'),
    {'metrics_impl': 'VALUE = 7\n'},
  )
  assert namespace.metrics.VALUE == 7


def test_missing_name_errors(namespace):
  with pytest.raises(AttributeError, match='no installed distribution'):
    namespace.Nobody
  with pytest.raises(AttributeError, match='pip install flax-not-installed'):
    namespace.Known
  assert not hasattr(namespace, 'Nobody')


def test_broken_plugin_warns_and_is_skipped(make_dist, namespace):
  make_dist('broken-dist', 'import module_that_does_not_exist_123\n')
  make_dist(
    'fine-dist',
    export_plugin(namespace.__name__, 'Fine', 'fine_impl:Fine'),
    {'fine_impl': 'Fine = 1\n'},
  )
  with pytest.warns(plugins.FlaxPluginWarning, match="'broken-dist'"):
    assert namespace.Fine == 1
  failed = plugins.registry().failures()
  assert [f.distribution for f in failed] == ['broken-dist']
  assert 'module_that_does_not_exist_123' in failed[0].error


def test_broken_plugin_strict_mode_raises(make_dist, namespace, monkeypatch):
  make_dist('broken-strict', 'raise RuntimeError("boom")\n')
  monkeypatch.setenv('FLAX_PLUGINS_STRICT', '1')
  with pytest.raises(plugins.PluginError, match="'broken-strict'.*boom"):
    plugins.registry()


def test_plugin_without_hooks(make_dist):
  make_dist('hookless', 'def flax_exports():\n  return []\n')
  with pytest.warns(plugins.FlaxPluginWarning, match='no hook implementations'):
    plugins.registry().load_all()


def test_plugin_with_unknown_hook(make_dist):
  make_dist(
    'typo-hook',
    'from flax import plugins\n\n@plugins.hookimpl\n'
    'def flax_export():\n  return []\n',
  )
  with pytest.warns(
    plugins.FlaxPluginWarning, match='unknown hooks flax_export'
  ):
    plugins.registry().load_all()


def test_hook_returning_wrong_records(make_dist):
  make_dist(
    'bad-records',
    'from flax import plugins\n\n@plugins.hookimpl\n'
    'def flax_exports():\n  return [("flax.nnx", "X", "m:X")]\n',
  )
  reg = plugins.registry()
  with pytest.warns(plugins.FlaxPluginWarning, match='Export records'):
    assert reg.export('flax.nnx', 'X') is None


def test_hook_raising(make_dist):
  make_dist(
    'raising-hook',
    'from flax import plugins\n\n@plugins.hookimpl\n'
    'def flax_exports():\n  raise ValueError("bad table")\n',
  )
  with pytest.warns(plugins.FlaxPluginWarning, match='ValueError: bad table'):
    plugins.registry().load_all()


def test_two_providers_conflict(make_dist, namespace):
  ns = namespace.__name__
  make_dist(
    'dist-one',
    export_plugin(ns, 'Same', 'one_impl:Same'),
    {'one_impl': 'Same = 1\nOther = 5\n'},
  )
  make_dist(
    'dist-two',
    export_plugin(ns, 'Same', 'two_impl:Same'),
    {'two_impl': 'Same = 2\n'},
  )
  with pytest.raises(plugins.PluginConflictError) as info:
    namespace.Same
  assert "'dist-one'" in str(info.value) and "'dist-two'" in str(info.value)
  with pytest.raises(plugins.PluginConflictError):
    exec(f'from {ns} import Same', {})


def test_third_party_cannot_replace_first_party_name(make_dist, namespace):
  make_dist(
    'shadowing-dist',
    export_plugin(namespace.__name__, 'Own', 'shadow_impl:Own')
    + '\n@plugins.hookimpl\ndef flax_config_options():\n  return []\n',
    {'shadow_impl': 'Own = "replaced"\nExtra = 1\n'},
  )
  with pytest.warns(plugins.FlaxPluginWarning, match="'shadowing-dist'.*Own"):
    dir(namespace)
  assert namespace.Own == 'first-party value'


def test_third_party_cannot_replace_first_party_export(make_dist):
  # A third-party plugin claiming a name that a first-party distribution
  # exports (or a first-party backend) is ignored with a warning.
  make_dist(
    'evil-dist',
    'from flax import plugins\n\n@plugins.hookimpl\ndef flax_exports():\n'
    '  return [plugins.Export("flax.core", "FrozenDict", "evil_impl:F")]\n'
    '\n@plugins.hookimpl\ndef flax_checkpoint_backends():\n'
    '  return [plugins.Backend("msgpack", "evil_impl:B", 10**6)]\n',
    {'evil_impl': 'F = B = "evil"\n'},
  )
  reg = plugins.registry()
  reg._index['exports'][('flax.core', 'FrozenDict')] = [
    ('flax-core', plugins.Export('flax.core', 'FrozenDict', 'm:FrozenDict'))
  ]
  reg._index['checkpoint_backends'][('msgpack',)] = [
    ('flax-serialization', plugins.Backend('msgpack', 'm:msgpack_backend'))
  ]
  with pytest.warns(plugins.FlaxPluginWarning) as record:
    reg.load_all()
  messages = sorted(str(w.message) for w in record)
  assert len(messages) == 2
  assert "'evil-dist' provides checkpoint backend 'msgpack'" in messages[0]
  assert "first-party distribution 'flax-serialization'" in messages[0]
  assert "'evil-dist' provides flax.core.FrozenDict" in messages[1]
  assert reg.export('flax.core', 'FrozenDict').target == 'm:FrozenDict'
  assert reg.backends('checkpoint')['msgpack'][0] == 'flax-serialization'
  assert not reg.conflicts


def test_two_first_party_providers_still_conflict():
  reg = plugins.registry()
  reg._index['exports'][('flax.nnx', 'Claimed')] = [
    ('flax-layers', plugins.Export('flax.nnx', 'Claimed', 'm:C')),
    ('flax-training', plugins.Export('flax.nnx', 'Claimed', 'n:C')),
  ]
  reg._check_conflicts()
  with pytest.raises(plugins.PluginConflictError, match='flax-layers.*train'):
    reg.export('flax.nnx', 'Claimed')


def test_disable_plugins_env(make_dist, namespace, monkeypatch):
  make_dist('to-disable', export_plugin(namespace.__name__, 'Gone', 'x:Gone'))
  monkeypatch.setenv('FLAX_DISABLE_PLUGINS', 'other, to-disable')
  reg = plugins.registry()
  info = [p for p in reg.plugins if p.distribution == 'to-disable']
  assert info[0].status == 'disabled'
  with pytest.raises(AttributeError):
    namespace.Gone


BACKENDS = """
from flax import plugins

@plugins.hookimpl
def flax_checkpoint_backends():
  return [plugins.Backend('low', 'backend_impl:LOW', priority=1001),
          plugins.Backend('high', 'backend_impl:HIGH', priority=1005)]
"""


def test_backend_selection_order(make_dist, monkeypatch):
  make_dist(
    'backends-dist', BACKENDS, {'backend_impl': 'LOW = "low"\nHIGH = "high"\n'}
  )
  names = plugins.backend_names('checkpoint')
  assert names.index('high') < names.index('low')
  # Highest priority when nothing selects one.
  assert plugins.select_backend('checkpoint') == 'high'
  # Config flag beats priority.
  configurations.config.update('flax_checkpoint_backend', 'low')
  try:
    assert plugins.select_backend('checkpoint') == 'low'
    # Context manager beats the flag; the argument beats both.
    with plugins.use_backend('checkpoint', 'high'):
      assert plugins.select_backend('checkpoint') == 'high'
      assert plugins.select_backend('checkpoint', 'low') == 'low'
  finally:
    configurations.config.update('flax_checkpoint_backend', '')


def test_unknown_backend_name(make_dist):
  make_dist(
    'backends-dist2', BACKENDS, {'backend_impl': 'LOW = "low"\nHIGH = "high"\n'}
  )
  with pytest.raises(
    ValueError, match="Unknown checkpoint backend 'nope'.*'high'"
  ):
    plugins.select_backend('checkpoint', 'nope')
  with pytest.raises(ValueError, match='Unknown backend kind'):
    plugins.select_backend('storage')


def test_config_options_from_plugins(make_dist):
  make_dist(
    'config-dist',
    'from flax import plugins\n\n@plugins.hookimpl\n'
    'def flax_config_options():\n'
    '  return [plugins.ConfigOption("flax_fancy_mode", False, "help")]\n',
  )
  config = configurations.Config()
  assert config.flax_fancy_mode is False
  config.update('flax_fancy_mode', True)
  assert config.flax_fancy_mode is True
  with pytest.raises(LookupError, match='Unrecognized config option'):
    config.update('flax_no_such_flag', True)


def test_report_lists_everything(make_dist, namespace):
  make_dist(
    'report-good', export_plugin(namespace.__name__, 'R', 'r:R'), version='2.5'
  )
  make_dist('report-broken', 'import missing_mod_for_report\n')
  reg = plugins.registry()
  with pytest.warns(plugins.FlaxPluginWarning):
    reg.load_all()
  out = io.StringIO()
  problems = plugins_main.report(reg, out)
  text = out.getvalue()
  assert 'report-good 2.5 [third-party] ok' in text
  assert f'{namespace.__name__}.R -> r:R' in text
  assert 'report-broken 1.0 [third-party] failed' in text
  assert 'missing_mod_for_report' in text
  assert 'flax-core' in text and '[first-party]' in text
  assert problems == 1


def test_registry_is_built_once_across_threads():
  seen = []
  threads = [
    threading.Thread(target=lambda: seen.append(plugins.registry()))
    for _ in range(8)
  ]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert len({id(r) for r in seen}) == 1


def test_python_m_flax_plugins():
  result = subprocess.run(
    [sys.executable, '-m', 'flax.plugins'],
    capture_output=True,
    text=True,
    check=True,
  )
  assert 'flax-core' in result.stdout
  assert 'first-party' in result.stdout
  assert 'plugins,' in result.stdout


def test_malformed_records_are_skipped_with_a_warning(make_dist, namespace):
  ns = namespace.__name__
  make_dist(
    'sloppy-dist',
    'from flax import plugins\n\n@plugins.hookimpl\ndef flax_exports():\n'
    f'  return [plugins.Export({ns!r}, 123, "x:y"),\n'
    f'          plugins.Export({ns!r}, "Fine", "sloppy_impl:Fine"),\n'
    f'          plugins.Export({ns!r}, "Bad", "not a target"),\n'
    f'          plugins.Export(None, "Other", "x:y")]\n'
    '\n@plugins.hookimpl\ndef flax_checkpoint_backends():\n'
    '  return [plugins.Backend("fast", "x:y", priority="high")]\n',
    {'sloppy_impl': 'Fine = 11\n'},
  )
  with pytest.warns(plugins.FlaxPluginWarning) as record:
    assert namespace.Fine == 11
  messages = '\n'.join(str(w.message) for w in record)
  assert len(record) == 4
  assert messages.count("Flax plugin 'sloppy-dist' (1.0)") == 4
  assert 'name must be a str, got int' in messages
  assert "'not a target' is not 'package.module'" in messages
  assert 'namespace must be a str, got NoneType' in messages
  assert 'priority must be a number, got str' in messages
  assert sorted(n for n in dir(namespace) if not n.startswith('_')) == [
    'Fine',
    'Own',
  ]
  out = io.StringIO()
  assert plugins_main.report(plugins.registry(), out) == 4
  text = out.getvalue()
  assert 'sloppy-dist 1.0 [third-party] ok (4 records skipped)' in text
  assert text.count('  skipped record: ') == 4
  assert '4 records skipped' in text


def test_first_party_lookups_do_not_import_third_party_plugins(
  make_dist, namespace
):
  module = make_dist(
    'lazy-dist',
    export_plugin(namespace.__name__, 'Late', 'late_impl:Late'),
    {'late_impl': 'Late = "late"\n'},
  )
  reg = plugins.registry()
  assert [p.status for p in reg.plugins if p.distribution == 'lazy-dist'] == [
    'not loaded'
  ]
  # A name a first-party distribution provides (flax-core, always there).
  reg._index['exports'][('flax.core', 'Given')] = [
    ('flax-core', plugins.Export('flax.core', 'Given', 'flax.core:FrozenDict'))
  ]
  assert reg.export('flax.core', 'Given').target == 'flax.core:FrozenDict'
  assert reg.export_provider('flax.core', 'Given') == 'flax-core'
  assert module not in sys.modules
  # A name no first-party distribution has loads the others.
  assert namespace.Late == 'late'
  assert module in sys.modules
  assert reg.fully_loaded


BROKEN_LAYER = {'broken_layer_impl': 'import missing_dependency_xyz\n'}


def test_broken_export_behaves_as_missing_name(make_dist, namespace):
  import inspect
  import pydoc

  make_dist(
    'broken-layer',
    export_plugin(namespace.__name__, 'Broken', 'broken_layer_impl:Broken'),
    BROKEN_LAYER,
  )
  assert not hasattr(namespace, 'Broken')
  assert getattr(namespace, 'Broken', 'default') == 'default'
  members = dict(inspect.getmembers(namespace))
  assert 'Broken' not in members and members['Own'] == 'first-party value'
  assert "Own = 'first-party value'" in pydoc.render_doc(
    namespace, renderer=pydoc.plaintext
  )
  with pytest.raises(plugins.PluginImportError) as info:
    namespace.Broken
  error = info.value
  assert isinstance(error, AttributeError)
  assert isinstance(error.import_error, ModuleNotFoundError)
  assert error.__cause__ is error.import_error
  assert error.name == 'Broken'
  assert "provided by 'broken-layer' as 'broken_layer_impl:Broken'" in str(
    error
  )
  assert 'missing_dependency_xyz' in str(error)
  with pytest.raises(ImportError, match='cannot import name'):
    exec(f'from {namespace.__name__} import Broken', {})
