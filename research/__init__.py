"""Research code kept for benchmarks and their tests, not shipped in the wheel: the measured
correctors of the physics predictor (``measured_correctors``), the GNN ablation and the
label noise floor. Nothing in ``gpuscope`` imports it."""
