"""What the hardware is: GPU types (the device catalog) and clusters of them.

* :class:`DeviceSpec`, ``load_catalog``, ``get_device``, ``parse_device_list`` (``devices``):
  the spec-sheet figures of every GPU type (``datasets/devices.toml``);
* :class:`ClusterConfig`, ``load_cluster`` (``config``): servers, partitions and flavors from a
  cluster file (TOML);
* :class:`ClusterSpec` (``counts``): a cluster as GPU types x counts (``a100:2,h100:1``), the
  view the allocator simulates.

Names load on first use (:mod:`gpuscope.core.lazy`).
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "DeviceSpec": ".devices", "load_catalog": ".devices", "get_device": ".devices",
    "parse_device_list": ".devices", "DEFAULT_CATALOG": ".devices",
    "ClusterConfig": ".config", "load_cluster": ".config", "parse_cluster": ".config",
    "ClusterSpec": ".counts",
})
