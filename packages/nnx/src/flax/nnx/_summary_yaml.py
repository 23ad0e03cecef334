"""``NoneDumper``: a YAML dumper that writes ``None`` as ``None``.

Kept apart from :mod:`flax.nnx.summary` so that ``yaml`` is imported only
when the dumper is used.

>>> import yaml
>>> from flax.nnx.summary import NoneDumper
>>> yaml.dump({'a': None}, Dumper=NoneDumper)
'a: None\\n'
"""

import yaml


class NoneDumper(yaml.SafeDumper):
  """A ``yaml.SafeDumper`` that represents ``None`` as ``None``."""


def _represent_none(dumper, _):
  return dumper.represent_scalar('tag:yaml.org,2002:str', 'None')


NoneDumper.add_representer(type(None), _represent_none)
