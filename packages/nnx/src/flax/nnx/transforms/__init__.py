"""NNX transforms: lifted versions of JAX transforms over graph nodes."""
