"""The device as the kernel model sees it: spec-sheet figures only (``KernelDevice``).

Everything device-specific the kernel classes use comes from a catalog ``DeviceSpec``
(``datasets/devices.toml``): the FP32, TF32 and FP16 tensor-core peaks at the sustained SM
clock (``DeviceSpec.clock_factor``), the DRAM bandwidth, the SM count, the L2 size and the SM
clock, plus the architecture (which cuBLAS kernel generation and which tensor cores it has,
``gpuscope.emulator.kernels.precision``). Nothing here was measured on the device, so a GPU
known only from its spec sheet gets a prediction.

Where the catalog leaves a figure out: the clock is the FP32 peak over ``2 x SMs x lanes``
(FP32 lanes per SM of the architecture, ``FP32_LANES``), the L2 the architecture's typical
L2 per SM (``L2_KB_PER_SM``) times the SMs.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscope.cluster.devices import DeviceSpec

#: FP32 lanes per SM by architecture (NVIDIA architecture whitepapers; GA100/GP100-class data
#: centre dies have 64, recognised by their TF32 (GA100) or missing tensor cores (GP100 is
#: told apart by its SM count per TFLOP, see ``_lanes``).
FP32_LANES: dict[str, int] = {"kepler": 192, "maxwell": 128, "pascal": 128, "volta": 64,
                              "turing": 64, "ampere": 128, "ada": 128, "hopper": 128}
#: Architectures whose SMs issue FP32 on two datapaths (the doubled FP32 lanes of GA10x,
#: AD10x and GH100: 128 lanes per SM, half of them shared with INT32). Their spec-sheet FP32
#: peak counts both; cuBLAS SGEMM reaches a smaller fraction of it than on single-datapath
#: SMs (``KernelDevice.simt_intensity``, and a cited ``KernelParams.dual_fp32_scale``).
#: GA100 (64 lanes) is not one.
DUAL_FP32_ARCHS: frozenset[str] = frozenset({"ampere", "ada", "hopper"})
#: Shared-memory bytes an SM serves per clock (32 banks of 4 bytes; Kepler's SMX has 8-byte
#: banks in its 64-bit mode, cuBLAS's SGEMM mode: the Kepler tuning guide, "Shared Memory
#: Bandwidth"). With the FP32 lanes it sets how much reuse a SIMT GEMM tile needs
#: (``KernelDevice.simt_intensity``).
SMEM_BYTES_PER_CLK: dict[str, int] = {"kepler": 256}
#: Typical L2 per SM (KiB) by architecture, for a device whose catalog entry gives no L2
#: (whitepapers: GK210 1.5 MiB / 13 SMX, GP104 2 MiB / 20, GV100 6 MiB / 80, TU104 4 MiB / 40,
#: GA102 6 MiB / 84, AD104 48 MiB / 60, GH100 50 MiB / 132).
L2_KB_PER_SM: dict[str, float] = {"kepler": 118.0, "maxwell": 128.0, "pascal": 102.0,
                                  "volta": 77.0, "turing": 102.0, "ampere": 73.0,
                                  "ada": 800.0, "hopper": 388.0}


def _lanes(spec: DeviceSpec) -> int:
    lanes = FP32_LANES.get(spec.arch, 64)
    if spec.arch == "ampere" and spec.tf32_tflops >= 6.0 * spec.fp32_tflops:
        return 64  # GA100: TF32 dense = 8x FP32
    if spec.arch == "pascal" and spec.sm_count > 40:
        return 64  # GP100: 56-60 SMs of 64 lanes
    return lanes


@dataclass(frozen=True)
class KernelDevice:
    """Spec figures of one device in SI units, at the sustained SM clock.

    ``fp32`` / ``tf32`` / ``fp16``: peak FLOP/s of FP32 CUDA cores, TF32 and FP16/BF16
    tensor cores (0: none); ``bw``: DRAM bytes/s; ``l2``: L2 bytes; ``clock``: SM clock, Hz;
    ``hbm``: stacked (HBM) rather than GDDR memory (the datasheet's ``mem_type``), whose
    streaming efficiency the memory model fits apart; ``fp32_lanes``: FP32 lanes per SM
    (``FP32_LANES``, GA100/GP100 told apart).
    """

    name: str
    arch: str
    sms: int
    fp32: float
    tf32: float
    fp16: float
    bw: float
    l2: float
    clock: float
    hbm: bool = False
    fp32_lanes: int = 64

    @classmethod
    def from_spec(cls, spec: DeviceSpec) -> KernelDevice:
        cf = spec.clock_factor
        if spec.boost_clock_mhz > 0:
            clock = spec.boost_clock_mhz * 1e6 * cf
        else:
            clock = spec.fp32_tflops * 1e12 * cf / (2.0 * spec.sm_count * _lanes(spec))
        l2 = spec.l2_mb * 2**20 if spec.l2_mb > 0 else (
            L2_KB_PER_SM.get(spec.arch, 100.0) * 1024.0 * spec.sm_count)
        return cls(name=spec.name, arch=spec.arch, sms=int(spec.sm_count),
                   fp32=spec.fp32_tflops * 1e12 * cf, tf32=spec.tf32_tflops * 1e12 * cf,
                   fp16=spec.tensor_tflops * 1e12 * cf, bw=spec.mem_bw_gbs * 1e9, l2=l2,
                   clock=clock, hbm=spec.mem_type.upper().startswith("HBM"),
                   fp32_lanes=_lanes(spec))

    @property
    def dual_fp32(self) -> bool:
        """Whether the SM's FP32 peak counts two datapaths (``DUAL_FP32_ARCHS``)."""
        return self.arch in DUAL_FP32_ARCHS and self.fp32_lanes == 128

    @property
    def simt_intensity(self) -> float:
        """FP32 FLOP per shared-memory byte an SM issues per clock, relative to a 64-lane SM
        with 128-byte shared memory (GP100, GV100, TU10x, GA100 = 1; GP10x, GA10x, AD10x,
        GH100 = 2; Kepler's SMX 1.5)::

            simt_intensity = (2 x lanes / smem_bytes_per_clk) / (2 x 64 / 128)

        A SIMT GEMM tile feeds its FMAs from shared memory: the more FLOPs an SM issues per
        byte it can load, the more reuse (arithmetic intensity) a tile needs to keep the
        lanes busy (``gemm.tile_time``)."""
        smem = SMEM_BYTES_PER_CLK.get(self.arch, 128)
        return self.fp32_lanes * 128.0 / (64.0 * smem)

    @property
    def sm_rate(self) -> float:
        """FP32 FLOP/s of one SM."""
        return self.fp32 / self.sms
