"""The base layer every room may import: errors, file I/O, number limits, data locations, the
label targets, provenance checks and the t_jng contract. It imports no room
(``tests/test_layering.py``), and none of its modules loads torch, pandas or numpy when
imported (``tests/test_cli_startup.py``).

* :mod:`~gpuscope.core.errors`: ``InputError`` (one line, exit 2), ``CheckpointError``,
  ``SlurmError``;
* :mod:`~gpuscope.core.io`: every reader and writer of user files;
* :mod:`~gpuscope.core.limits`: bounded argparse number types, memory and count budgets;
* :mod:`~gpuscope.core.data`: bundled data and others' measured data;
* :mod:`~gpuscope.core.targets`: the resources, targets and capacities (seed 001 Table 2);
* :mod:`~gpuscope.core.provenance`: ``measured``/``emulated`` checks on label rows;
* :mod:`~gpuscope.core.tjng`: the t_jng table and the reference scheduler's folder format;
* :mod:`~gpuscope.core.lazy`: the lazy-export helper of every ``__init__``.
"""
