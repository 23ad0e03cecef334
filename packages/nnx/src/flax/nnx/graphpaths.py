"""The Variable paths a GraphDef expects, in leaf order, and the error text
of ``nnx.merge`` when the states passed to it have other paths."""

import jax

from flax.nnx.flattenlib import _key_of


def _paths_mismatch(graphdef, flats) -> str:
  """Which paths of ``graphdef`` the states lack or add (error text)."""
  if any(paths is None for paths, _ in flats):
    return ''
  given = [p for paths, _ in flats for p in paths]
  expected = graphdef_paths(graphdef)
  have = set(given)
  want = set(expected)
  missing = [p for p in expected if p not in have]
  extra = [p for p in given if p not in want]
  text = ''
  if missing:
    text += f' The states have no value at {_path_list(missing)}.'
  if extra:
    text += f' The GraphDef has no leaf at {_path_list(extra)}.'
  return text


def _path_list(paths) -> str:
  shown = ', '.join(repr(p) for p in paths[:5])
  return shown + (f' and {len(paths) - 5} more' if len(paths) > 5 else '')


# id(graphdef) -> (graphdef, paths). Looked up by identity: caching the
# paths of a new GraphDef does not hash it (a hash walks its whole
# structure, which a first split of a large model would pay for); an
# equal GraphDef built elsewhere has its paths walked once.
_PATHS_CACHE: dict = {}


def cached_paths(graphdef):
  """The paths cached for this very ``graphdef``, or None."""
  entry = _PATHS_CACHE.get(id(graphdef))
  if entry is not None and entry[0] is graphdef:
    return entry[1]
  return None


def cache_paths(graphdef, paths) -> None:
  """Records ``paths`` as the leaf paths of ``graphdef``."""
  if len(_PATHS_CACHE) > 4096:
    _PATHS_CACHE.clear()
  _PATHS_CACHE[id(graphdef)] = (graphdef, paths)


def graphdef_paths(graphdef) -> list:
  """The leaf paths of ``graphdef`` (a GraphDef), in leaf order (cached)."""
  paths = cached_paths(graphdef)
  if paths is None:
    paths = []

    def walk(node, path):
      kind = node[0]
      if kind in ('v', 'a'):
        paths.append(path)
      elif kind in ('n', 'g'):
        for k, c in node[3]:
          walk(c, path + (k,))
      elif kind == 'l':
        for j, c in enumerate(node[2]):
          walk(c, path + (j,))
      elif kind == 'd':
        for k, c in zip(node[1], node[2]):
          walk(c, path + (k,))
      elif kind == 'p':
        keys = node[3] if len(node) > 3 else _tree_keys(node[1])
        for entry, c in zip(keys, node[2]):
          walk(c, path + (entry,))
      elif kind == 't':  # tree mode: (path, position) in path order
        paths.extend(p for p, _ in node[3])

    walk(graphdef.node, ())
    cache_paths(graphdef, paths)
  return paths


def _tree_keys(treedef):
  dummy = treedef.unflatten([0] * treedef.num_leaves)
  kv, _ = jax.tree_util.tree_flatten_with_path(
    dummy, is_leaf=lambda y: y is not dummy
  )
  return [_key_of(p[0]) for p, _ in kv]


def _paths_match(graphdef, paths) -> bool:
  if cached_paths(graphdef) is paths:
    return True
  return list(paths) == graphdef_paths(graphdef)
