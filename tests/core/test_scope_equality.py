"""Scope equality: one path of one tree with shared PRNG counters."""

import jax
import jax.numpy as jnp

from flax.core import Scope
from flax.core import apply
from flax.core import lift


def test_push_twice_gives_equal_scopes():
  seen = {}

  def f(scope):
    b = scope.push('b')
    again = scope.push('b', reuse=True)
    seen['b'] = (b == again, hash(b) == hash(again), {b: 1}.get(again))
    seen['c'] = b.push('c') == again.push('c', reuse=True)
    seen['other'] = b == scope.push('d')
    seen['rewound'] = (
      scope.rewound() == scope,
      scope.rewound(rewind_rngs=True) == scope,
      b.rewound() == b,
    )

  apply(f, mutable=True)({}, rngs={'params': jax.random.key(0)})
  assert seen == {
    'b': (True, True, 1),
    'c': True,
    'other': False,
    'rewound': (True, False, True),
  }


def test_other_trees_and_objects_are_not_equal():
  variables = {'params': {}}
  assert Scope(variables) != Scope(variables)
  scope = Scope({})
  assert (
    scope == scope and scope != 3 and scope.push('a') != Scope({}).push('a')
  )


def test_lift_sees_a_scope_inside_another_pushed_separately():
  # ``c`` lies under a ``b`` scope object other than the one lifted with
  # it: the lifted scopes still share the variables, so the mutation of
  # ``c``'s variable survives the write back of ``b``'s collection.
  def f(scope):
    c = scope.push('b').push('c')
    b = scope.push('b', reuse=True)

    def body(scopes):
      inner_c, inner_b = scopes
      assert inner_c.parent is inner_b
      v = inner_c.variable('muts', 'v', lambda: jnp.zeros(()))
      v.value += 1

    lift.remat(body)((c, b))

  _, variables = apply(f, mutable=True)({'muts': {'b': {'c': {'v': 0.0}}}})
  assert float(variables['muts']['b']['c']['v']) == 1.0
