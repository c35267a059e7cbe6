"""The labs, one module each, found by :func:`biaslab.registry.discover`; a lab composes library
parts, holds no algorithm of its own and never imports another lab (``tests/test_layers.py``).

- Day 1: ``xor``, ``mnist_mlp``, ``hidden_pca``, ``autoencoder_2d``, ``embeddings``.
- Day 2: ``gradients``, ``manual_backprop``, ``adam_vs_sgd``, ``lr_sweep``, ``depth``, ``sharpness``.
- Day 3: ``gaussians``, ``vae``, ``diffusion_spiral``, ``diffusion_mnist``, ``autoencoder_uses``,
  ``flows_unfolding``.
- Day 4: ``symmetries``, ``mlp_vs_cnn_shift``, ``gnn_nodes``, ``self_attention``, ``mnist1d``,
  ``sequences``, ``physics_loss``, ``equivariance``, ``symmetry_three_ways``, ``scaling_laws``.
- Day 5: ``bias_variance``, ``calibration``, ``rotated_mnist``, ``ood``, ``adversarial``,
  ``decision``, ``regularization``.
- Benchmarks and your data: ``qm9``, ``compare``.
- The lectures' claims: ``claims``, ``training_claims`` (exact verdicts before any training).
- ``workshop``: the labs of its days, one after the other (:func:`biaslab.sequence.run_in_order`).

Each lab records its metrics with their dimensions where they have some
(``ctx.metric("accuracy", 0.9, model="cnn", split="test")``; :mod:`biaslab.records`) and declares
the words of their labels beside them (``WORDS``, given to ``@experiment``).
"""
