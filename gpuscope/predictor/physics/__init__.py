"""The default predictor: learnt per-target corrections to the emulator's analytic estimate.

* ``features``: :class:`FeatureBuilder` (emulator estimate + graph totals per (job, device)),
  the device feature vector;
* ``analytic`` / ``run_stats``: closed-form labels from an estimate (and their run-length
  statistics);
* ``targets``: the label spaces the model learns in;
* ``hybrid``: :class:`HybridModel` (per target: analytic, GBT or MLP correction);
* ``trees`` / ``mlp``: the learners, packed into arrays so checkpoints load ``weights_only``;
* ``dataset``: :class:`PhysicsData`, ``load_physics``;
* ``model``: ``fit_physics``, ``save_physics``, :class:`PhysicsPredictor`, ``domain_warning``;
* ``corpus``: the architecture corpus behind ``multi.pt`` (maintainer command).
"""
