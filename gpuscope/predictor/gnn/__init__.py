"""Seed 001's Driple GNN (``--arch gnn``; the bundled ``*-driple.pt``): GCN, a shared GCN
layer with a GRU between applications, Set2Set readout and an MLP head, min-max normalised MSE,
transfer learning from another device's weights.

``model`` (the network), ``train`` (fitting), ``data`` / ``batching`` / ``scaling`` /
``losses`` (inputs), ``checkpoint``, ``predict`` (batched inference and ``load_predictor``),
``evaluation`` / ``splits`` / ``metrics`` / ``baselines`` (scoring against a GBT baseline).
"""
