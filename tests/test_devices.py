"""Device catalog: every device, every field, every source."""

from __future__ import annotations

import pytest

from gpuscope.cluster.devices import (
    SPEC_FIELDS,
    DeviceSpec,
    get_device,
    load_catalog,
    load_references,
    parse_device_list,
)
from gpuscope.core.errors import InputError

REQUIRED = ("gtx1080", "rtx2070", "titanx", "gtx1080ti", "quadro-p600", "k80", "m60", "p100",
            "v100", "t4", "a100", "h100")


def test_catalog_has_required_devices_with_every_field_and_source() -> None:
    cat = load_catalog()
    refs = load_references()
    assert set(REQUIRED) <= set(cat)
    for name, d in cat.items():
        assert isinstance(d, DeviceSpec) and d.name == name
        for f in SPEC_FIELDS:
            src = d.sources.get(f)
            assert src, f"{name}.{f} has no source"
            assert src.split(":")[0].strip() in refs, f"{name}.{f}: unknown reference {src!r}"
        assert d.fp32_tflops > 0 and d.mem_gb > 0 and d.mem_bw_gbs > 0 and d.price_per_h > 0
        assert d.power_w > 0 and d.host_cores > 0 and d.host_threads >= d.host_cores


def test_paper_machines_match_seed001_table5() -> None:
    # seed 001 Table 5: 8 GB, 8 GB, 12 GB; hosts i7-4790K, Ryzen 5 3600, i7-6900K.
    assert get_device("gtx1080").mem_gb == 8 and "4790K" in get_device("gtx1080").host_cpu
    assert get_device("rtx2070").mem_gb == 8 and "3600" in get_device("rtx2070").host_cpu
    t = get_device("titanx")
    assert t.mem_gb == 12 and t.arch == "pascal" and "6900K" in t.host_cpu
    assert t.mem_mb == 12288.0
    # One K80 die as clouds expose it: half the board's 8.73 TFLOPS and 24 GB.
    k80 = get_device("k80")
    assert k80.mem_gb == 12 and k80.fp32_tflops == pytest.approx(8.73 / 2, rel=0.01)


def test_unknown_device_lists_known_ones() -> None:
    with pytest.raises(InputError, match="known devices: .*gtx1080"):
        get_device("gtx9999")
    assert [d.name for d in parse_device_list("gtx1080, TitanX")] == ["gtx1080", "titanx"]
    with pytest.raises(InputError):
        parse_device_list(" , ")


def test_bad_catalog_is_one_line_error(tmp_path) -> None:
    p = tmp_path / "d.toml"
    p.write_text('[devices.x]\narch = "pascal"\n')
    with pytest.raises(InputError, match="lacks field"):
        load_catalog(p)
    p.write_text("not toml [")
    with pytest.raises(InputError, match="not valid TOML"):
        load_catalog(p)
