"""Sharding on 8 fake CPU devices (each test runs in a subprocess)."""


def test_logical_constraint_and_unbox_shard_under_context_mesh(
  run_on_8_devices,
):
  run_on_8_devices("""
    mesh = jax.make_mesh((2, 4), ('data', 'model'),
                         axis_types=(AxisType.Auto,) * 2)
    rules = (('batch', 'data'), ('hidden', 'model'))
    x = jnp.arange(8 * 16, dtype=jnp.float32).reshape(8, 16)

    @jax.jit
    def f(x):
      return spmd.with_logical_constraint(x * 2, ('batch', 'hidden'))

    with jax.set_mesh(mesh), spmd.logical_axis_rules(rules):
      y = f(x)
    assert y.sharding.spec == P('data', 'model'), y.sharding
    np.testing.assert_array_equal(y, 2 * np.asarray(x))
    # Each device holds a (4, 4) block.
    assert {s.data.shape for s in y.addressable_shards} == {(4, 4)}

    box = spmd.LogicallyPartitioned(x, ('batch', 'hidden'), rules=rules)
    with jax.set_mesh(mesh):
      z = jax.jit(lambda b: b.unbox() + 0)(box)
    assert z.sharding.spec == P('data', 'model'), z.sharding
    np.testing.assert_array_equal(z, np.asarray(x))
  """)


def test_partitioned_unbox_with_box_mesh_and_explicit_axes(run_on_8_devices):
  run_on_8_devices("""
    auto = jax.make_mesh((2, 4), ('data', 'model'),
                         axis_types=(AxisType.Auto,) * 2)
    box = meta.Partitioned(jnp.ones((8, 16)), (None, 'model'), mesh=auto)
    y = jax.jit(lambda b: b.unbox() * 3)(box)
    assert y.sharding.spec == P(None, 'model'), y.sharding
    np.testing.assert_array_equal(y, 3 * np.ones((8, 16)))

    explicit = jax.make_mesh((2, 4), ('data', 'model'))
    with jax.set_mesh(explicit):
      box = meta.Partitioned(jnp.ones((8, 16)), ('data', None))
      y = box.unbox()
      assert y.sharding.spec == P('data', None), y.sharding
      y = jax.jit(lambda b: b.unbox() + 1)(box)
      assert y.sharding.spec == P('data', None), y.sharding
  """)


def test_init_with_shardings_from_partition_specs(run_on_8_devices):
  run_on_8_devices("""
    mesh = jax.make_mesh((2, 4), ('data', 'model'),
                         axis_types=(AxisType.Auto,) * 2)
    w_init = spmd.with_logical_partitioning(
        jax.nn.initializers.lecun_normal(), ('embed', 'hidden'))

    def init(key):
      return {'w': w_init(key, (16, 32)), 'b': jnp.zeros(32)}

    abstract = jax.eval_shape(init, jax.random.key(0))
    logical = spmd.get_partition_spec(abstract)
    assert logical == {'w': P('embed', 'hidden'), 'b': P()}
    rules = (('embed', 'data'), ('hidden', 'model'))
    shardings = spmd.logical_to_mesh_sharding(logical, mesh, rules)
    params = jax.jit(init, out_shardings=shardings)(jax.random.key(0))
    assert isinstance(params['w'], spmd.LogicallyPartitioned)
    assert params['w'].value.sharding.spec == P('data', 'model')
    assert {s.data.shape for s in params['w'].value.addressable_shards} == {
        (8, 8)}
    expected = jax.nn.initializers.lecun_normal()(jax.random.key(0), (16, 32))
    np.testing.assert_allclose(params['w'].value, expected, rtol=1e-6)
    # get_sharding gives the mesh sharding of Partitioned boxes directly.
    boxed = {'w': meta.Partitioned(jnp.zeros((16, 32)), ('data', 'model'))}
    assert meta.get_sharding(boxed, mesh)['w'] == NamedSharding(
        mesh, P('data', 'model'))
  """)


def test_legacy_with_mesh_block_is_not_a_context_mesh(run_on_8_devices):
  # As in Flax 0.12.8: only jax.set_mesh sets the mesh that metadata
  # constraints use; under an older `with mesh:` block they are skipped.
  run_on_8_devices("""
    import warnings
    from jax.sharding import Mesh, SingleDeviceSharding
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ('data', 'model'))
    box = meta.Partitioned(jnp.ones((8, 16)), ('data', 'model'))
    with warnings.catch_warnings():
      warnings.simplefilter('ignore', DeprecationWarning)
      with mesh:
        assert meta.get_global_mesh() is None
        y = jax.jit(lambda b: b.unbox() + 1)(box)
    assert isinstance(y.sharding, SingleDeviceSharding), y.sharding
    with jax.set_mesh(mesh):
      assert meta.get_global_mesh() is not None
      y = jax.jit(lambda b: b.unbox() + 1)(box)
    assert y.sharding.spec == P('data', 'model'), y.sharding
  """)
