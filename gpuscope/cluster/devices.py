"""The device catalog: ``DeviceSpec`` and ``datasets/devices.toml`` (design.md, Import order).

A device is one GPU as a cloud VM or a workstation exposes it (a K80 or M60 board holds two
dies; the catalog lists one die, as Azure NC6/NV6 expose it) together with the host that feeds
it: the emulator needs the GPU's peak FLOP/s, memory size and bandwidth, and the host's cores
and single-core speed (seed 001 Table 5 and Table 1's CPU bottleneck); the cost-based schedulers
(seeds 000, 002) need the price per hour and the power draw. Every figure in the TOML names its
source. This is a base module: no torch, importable by every stage.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpuscope.core.data import bundled
from gpuscope.core.errors import InputError
from gpuscope.core.limits import check_number, check_text

#: Default catalog file; ``GPUSCOPE_DEVICES`` overrides it.
DEFAULT_CATALOG: Path = bundled("devices.toml")
ARCHS: tuple[str, ...] = (
    "kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper",
)
#: Host/software generations: ``legacy`` = 2015-2019 CPUs with PyTorch 1.x / TensorFlow 1.x
#: (seed 001's and Gavel's machines); ``modern`` = 2021+ CPUs with PyTorch 2.x, cuDNN 9.
HOST_ERAS: tuple[str, ...] = ("legacy", "modern")
#: x16 payload bandwidth per direction in GB/s by PCIe generation (PCI-SIG).
PCIE_GBS: dict[int, float] = {3: 15.75, 4: 31.5, 5: 63.0}


@dataclass(frozen=True)
class DeviceSpec:
    """One GPU type with its host (units in the field names; see ``datasets/devices.toml``).

    ``tensor_tflops`` is the FP16 tensor-core peak with FP32 accumulate (0: no tensor cores),
    ``tf32_tflops`` the TF32 tensor-core peak (0: none). ``host_single_core`` is relative to an
    i7-4790K (seed 001's GTX 1080 host). ``host_cpu_quota`` limits the cores the input pipeline
    may use (0: all ``host_threads``), which is how the catalog expresses seed 001's RTX 2070
    machine "simulated as a low-performance system". ``host_era`` names the host/software
    generation whose host-side costs the emulator uses (``HOST_ERAS``; docs/emulator.md).
    ``boost_clock_mhz`` is the clock the datasheet peaks assume and ``sustained_clock_mhz``
    the SM clock the GPU holds under a sustained training/inference load where a cited
    measurement shows it lower (a 70 W T4 at its power cap); 0 = not given,
    the peaks are taken as sustained. ``clock_factor`` scales the compute peaks, not the
    memory bandwidth (the memory clock is not power-throttled). ``l2_mb`` is the L2 cache
    (MiB; 0 = not given, the kernel model then assumes its architecture's typical L2 per SM)
    and ``aliases`` the comma-separated names the GPU reports (``torch.cuda.get_device_name``,
    e.g. ``Tesla T4``), which kernel tables may use instead of the catalog name; ``mem_type``
    the DRAM technology of the datasheet (``HBM2``, ``GDDR6``...; empty: not given).
    """

    name: str
    arch: str
    fp32_tflops: float
    tensor_tflops: float
    tf32_tflops: float
    mem_gb: float
    mem_bw_gbs: float
    sm_count: int
    pcie_gen: int
    nvlink_gbs: float
    power_w: float
    price_per_h: float
    host_cpu: str
    host_cores: int
    host_threads: int
    host_single_core: float
    host_cpu_quota: float
    host_era: str = "legacy"
    boost_clock_mhz: float = 0.0
    sustained_clock_mhz: float = 0.0
    l2_mb: float = 0.0
    aliases: str = ""
    mem_type: str = ""
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def mem_mb(self) -> float:
        """Device memory in MB as NVML reports ``memory.total`` (MiB): GPU memory is marketed
        in binary gigabytes (an "8 GB" card has 8192 MiB; seed 001 Table 1 sees 11930 MB in
        use on the 12 GB Titan X)."""
        return self.mem_gb * 1024.0

    @property
    def clock_factor(self) -> float:
        """Sustained over boost SM clock (1 where either is not given): the share of the
        datasheet compute peaks the GPU delivers under a sustained load."""
        if self.boost_clock_mhz > 0 and self.sustained_clock_mhz > 0:
            return self.sustained_clock_mhz / self.boost_clock_mhz
        return 1.0

    @property
    def pcie_gbs(self) -> float:
        return PCIE_GBS.get(self.pcie_gen, PCIE_GBS[3])

    @property
    def host_pipeline_cores(self) -> float:
        """Cores the input pipeline can use: the quota, else all hardware threads counted at
        the physical cores plus 25 % for SMT (a second thread adds about a quarter)."""
        if self.host_cpu_quota > 0:
            return self.host_cpu_quota
        return self.host_cores + 0.25 * max(0, self.host_threads - self.host_cores)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "sources"}


#: Fields a catalog entry may leave out (default 0: not given).
OPTIONAL_FIELDS: tuple[str, ...] = ("boost_clock_mhz", "sustained_clock_mhz", "l2_mb", "aliases",
                                     "mem_type")
SPEC_FIELDS: tuple[str, ...] = tuple(
    f.name for f in fields(DeviceSpec) if f.name not in ("name", "sources", *OPTIONAL_FIELDS)
)


#: Largest figure a catalog number may hold (TFLOP/s, GB, GB/s, W, $/h, MHz, cores).
MAX_FIGURE: float = 1e9


def _parse(name: str, d: Any, path: Path) -> DeviceSpec:
    where = f"{path}: device {name!r}"
    check_text("device name", name, origin=str(path))
    if not isinstance(d, dict):
        raise InputError(f"{where} must be a table ([devices.{name}]), not {type(d).__name__}")
    missing = [k for k in SPEC_FIELDS if k not in d]
    if missing:
        raise InputError(f"{where} lacks field(s) {', '.join(missing)}")
    kw: dict[str, Any] = {}
    for f in fields(DeviceSpec):
        if f.name in ("name", "sources"):
            continue
        v = d.get(f.name, f.default) if f.name in OPTIONAL_FIELDS else d[f.name]
        if f.type in ("int", int, "float", float):  # a TOML number; "4", true, nan refused
            if isinstance(v, str):
                raise InputError(f"{where}: {f.name} must be a number, got {v!r}")
            kw[f.name] = check_number(f.name, v, integer=f.type in ("int", int), low=0,
                                      high=MAX_FIGURE, origin=where)
        else:
            kw[f.name] = check_text(f.name, v, origin=where)
    if kw["host_era"] not in HOST_ERAS:
        raise InputError(f"{path}: device {name!r} has unknown host_era {kw['host_era']!r}; "
                         f"known: {', '.join(HOST_ERAS)}")
    if kw["arch"] not in ARCHS:
        raise InputError(f"{path}: device {name!r} has unknown arch {kw['arch']!r}")
    for k in ("fp32_tflops", "mem_gb", "mem_bw_gbs", "host_cores", "host_single_core"):
        if kw[k] <= 0:
            raise InputError(f"{path}: device {name!r}: {k} must be > 0")
    if kw["l2_mb"] < 0:
        raise InputError(f"{path}: device {name!r}: l2_mb must be >= 0 MiB")
    if kw["boost_clock_mhz"] < 0 or kw["sustained_clock_mhz"] < 0:
        raise InputError(f"{path}: device {name!r}: clocks must be >= 0 MHz")
    if kw["sustained_clock_mhz"] > 0 and not 0 < kw["sustained_clock_mhz"] <= kw["boost_clock_mhz"]:
        raise InputError(f"{path}: device {name!r}: sustained_clock_mhz needs boost_clock_mhz "
                         f">= it (got {kw['sustained_clock_mhz']} / {kw['boost_clock_mhz']})")
    raw = d.get("sources", {})
    if not isinstance(raw, dict):
        raise InputError(f"{where}: sources must be a table")
    sources = {str(k): str(v) for k, v in raw.items()}
    return DeviceSpec(name=name, sources=sources, **kw)


def _load(path: str, base: str = "") -> tuple[dict[str, DeviceSpec], dict[str, str]]:
    """The devices and references of catalog ``path``; an entry with ``like = "<device>"``
    takes the fields it leaves out from that device of ``path`` itself or of catalog ``base``
    (``usercatalog.resolve_like``). Cached per file version (a file written since is read
    again)."""
    try:
        st = os.stat(path)
        version = (st.st_mtime_ns, st.st_size)
    except OSError:
        version = (0, 0)  # read_toml names the problem
    return _load_version(path, version, base)


@lru_cache(maxsize=16)
def _load_version(path: str, version: tuple[int, int], base: str
                  ) -> tuple[dict[str, DeviceSpec], dict[str, str]]:
    from gpuscope.core.io import read_toml

    p = Path(path)
    data = read_toml(p, "device catalog")
    devs = data.get("devices")
    if not isinstance(devs, dict) or not devs:
        raise InputError(f"device catalog {p} has no [devices.<name>] tables")
    raw = data.get("references", {})
    if not isinstance(raw, dict):
        raise InputError(f"device catalog {p}: [references] must be a table")
    refs = {str(k): str(v) for k, v in raw.items()}
    out: dict[str, DeviceSpec] = {}
    plain = {n: d for n, d in devs.items() if not (isinstance(d, dict) and "like" in d)}
    for n, d in plain.items():
        out[n] = _parse(n, d, p)
    if len(plain) < len(devs):
        from gpuscope.cluster.usercatalog import resolve_like

        known = {**(_load(base)[0] if base else {}), **out}
        for n, d in devs.items():
            if n not in plain:
                out[n] = _parse(n, resolve_like(n, d, known, p), p)
    return out, refs


def _catalog_path(path: str | Path | None) -> Path:
    if path is not None:
        return Path(path)
    env = os.environ.get("GPUSCOPE_DEVICES")
    return Path(env) if env else DEFAULT_CATALOG


#: Environment variable naming the user's catalog (``--catalog`` sets it for the process and
#: the processes it starts); default :func:`user_catalog_path`.
USER_CATALOG_ENV = "GPUSCOPE_USER_DEVICES"


def user_catalog_path() -> Path:
    """The user's own catalog, layered on the bundled one: ``$GPUSCOPE_USER_DEVICES``, else
    ``$XDG_CONFIG_HOME/gpuscope/devices.toml`` (``~/.config/gpuscope/devices.toml``). It may
    not exist; ``gpuscope devices add`` writes it."""
    env = os.environ.get(USER_CATALOG_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gpuscope" / "devices.toml"


def use_catalog(path: str | Path) -> Path:
    """Make ``path`` the user catalog of this process and its children (``--catalog``); it
    must exist and load (one-line ``InputError`` otherwise)."""
    from gpuscope.core.io import check_input_file

    p = check_input_file(path, "device catalog").resolve()
    os.environ[USER_CATALOG_ENV] = str(p)
    _layers()  # a bad file or a name clash fails here, before any work
    return p


def _layers() -> tuple[dict[str, DeviceSpec], dict[str, DeviceSpec], dict[str, str]]:
    """(base devices, user devices, references) of the default catalog."""
    base_path = str(_catalog_path(None).resolve())
    base, refs = _load(base_path)
    user_p = user_catalog_path()
    if not user_p.is_file():
        return base, {}, refs
    user, user_refs = _load(str(user_p.resolve()), base_path)
    clash = sorted(set(user) & set(base))
    if clash:
        raise InputError(f"user catalog {user_p}: device {clash[0]!r} is also in the bundled "
                         "catalog; give your device another name")
    return base, user, {**refs, **user_refs}


def load_catalog(path: str | Path | None = None) -> dict[str, DeviceSpec]:
    """All devices by name: of catalog file ``path`` when given, else the bundled catalog
    (``datasets/devices.toml``, or ``$GPUSCOPE_DEVICES``) plus the user's
    (:func:`user_catalog_path`)."""
    if path is not None:
        return dict(_load(str(Path(path).resolve()), str(_catalog_path(None).resolve()))[0])
    base, user, _ = _layers()
    return {**base, **user}


def user_devices() -> dict[str, DeviceSpec]:
    """The devices of the user's catalog (none when it does not exist)."""
    return dict(_layers()[1])


def load_references(path: str | Path | None = None) -> dict[str, str]:
    """The catalog's ``[references]`` table: source key -> citation."""
    if path is not None:
        return dict(_load(str(Path(path).resolve()))[1])
    return dict(_layers()[2])


def _norm(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())


def resolve_device_name(name: str, path: str | Path | None = None) -> str | None:
    """The catalog name of ``name``: a catalog name, or one of a device's ``aliases`` (the
    names GPUs report, e.g. ``Tesla V100-PCIE-32GB``), compared without case, spaces or
    punctuation; ``None`` when nothing matches."""
    cat = load_catalog(path)
    key = name.strip().lower()
    if key in cat:
        return key
    want = _norm(name)
    for n, d in cat.items():
        if want == _norm(n) or want in {_norm(a) for a in d.aliases.split(",") if a.strip()}:
            return n
    return None


def get_device(name: str, path: str | Path | None = None) -> DeviceSpec:
    """The catalog device ``name`` (or alias); an unknown name raises ``InputError`` listing
    known ones."""
    cat = load_catalog(path)
    key = resolve_device_name(name, path) or name.strip().lower()
    if key not in cat:
        raise InputError(f"unknown device {name!r}; known devices: {', '.join(sorted(cat))} "
                         f"(a new GPU: gpuscope devices add {name} --like DEVICE)")
    return cat[key]


def parse_device_list(text: str, path: str | Path | None = None) -> list[DeviceSpec]:
    """Devices named in a comma-separated list (``gtx1080,rtx2070,titanx``), or every device
    of the catalog for ``all``."""
    if text.strip().lower() == "all":
        return list(load_catalog(path).values())
    names = [n for n in (s.strip() for s in text.split(",")) if n]
    if not names:
        raise InputError("no device named; give a comma-separated list such as gtx1080,titanx")
    return [get_device(n, path) for n in names]
