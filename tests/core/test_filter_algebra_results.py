"""Results (not only meaning) of the collection-filter algebra of flax.core.scope.

Empty results are an empty set; a few cases keep a bool or DenyList, as in
Flax 0.12.8.
"""

import pytest

from flax.core.scope import DenyList
from flax.core.scope import intersect_filters
from flax.core.scope import subtract_filters
from flax.core.scope import union_filters


def _norm(r):
  if isinstance(r, set):
    return ('set', sorted(r))
  if isinstance(r, DenyList) and isinstance(r.deny, set):
    return ('deny', sorted(r.deny))
  return r


@pytest.mark.parametrize(
  'fn, a, b, expected',
  [
    (intersect_filters, True, False, False),
    (intersect_filters, False, False, ('set', [])),
    (intersect_filters, 'a', 'b', ('set', [])),
    (intersect_filters, 'a', False, ('set', [])),
    (intersect_filters, [], 'a', ('set', [])),
    (intersect_filters, DenyList('a'), 'a', ('set', [])),
    (intersect_filters, 'a', DenyList('a'), ('set', [])),
    (intersect_filters, DenyList('a'), False, ('set', [])),
    (intersect_filters, True, 'a', 'a'),
    (
      intersect_filters,
      'params',
      ['params', 'batch_stats'],
      ('set', ['params']),
    ),
    (intersect_filters, DenyList('a'), DenyList('b'), ('deny', ['a', 'b'])),
    (intersect_filters, DenyList(['a', 'b']), ['a', 'c'], ('set', ['c'])),
    (subtract_filters, True, True, False),
    (subtract_filters, 'a', True, False),
    (subtract_filters, False, False, ('set', [])),
    (subtract_filters, 'a', 'a', ('set', [])),
    (subtract_filters, 'params', ['params', 'batch_stats'], ('set', [])),
    (subtract_filters, 'b', DenyList('a'), ('set', [])),
    (subtract_filters, False, DenyList('a'), ('set', [])),
    (subtract_filters, True, 'a', DenyList('a')),
    (subtract_filters, DenyList('a'), 'b', ('deny', ['a', 'b'])),
    (subtract_filters, DenyList('a'), DenyList('b'), ('set', ['b'])),
    (union_filters, False, False, ('set', [])),
    (union_filters, 'a', False, ('set', ['a'])),
    (union_filters, [], 'a', ('set', ['a'])),
    (union_filters, DenyList('a'), 'a', ('deny', [])),
    (union_filters, DenyList('a'), DenyList('b'), ('deny', [])),
    (union_filters, DenyList('a'), False, ('deny', ['a'])),
    (union_filters, DenyList(['a', 'b']), ['a', 'c'], ('deny', ['b'])),
    (union_filters, True, DenyList('a'), True),
  ],
)
def test_filter_algebra_results(fn, a, b, expected):
  assert _norm(fn(a, b)) == expected
