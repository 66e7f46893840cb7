"""gpuscope: profile GPUs with real training jobs, predict jobs' resource use from their
computational graphs, allocate heterogeneous clusters, and export t_jng tables.

Stages (data flows one way, see docs/design.md):
``workloads -> graphs -> profiling -> emulator -> predictor -> allocator -> schedulers``.
"""

__version__ = "0.1.0"
