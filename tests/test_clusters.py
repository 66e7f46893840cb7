"""The cluster contract (gpuscope.cluster.config): the bundled seed 003 cluster and file validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscope.cluster.config import (
    ClusterConfig,
    FlavorSpec,
    ServerSpec,
    default_cluster,
    load_cluster,
    parse_cluster,
)
from gpuscope.core.errors import InputError

VALID = """
name = "tiny"
source = "hand-written test file"
[[partitions]]
name = "P"
[[servers]]
name = "n1"
partition = "P"
gpu_type = "v100"
gpus = 4
cpus = 32
mem_gb = 128
power_kw = 2.0
[[servers]]
name = "n2"
partition = "P"
gpu_type = "t4"
gpus = 4
cpus = 16
mem_gb = 64
[[flavors]]
name = "half"
partition = "P"
gpus = 4
cpus = 16
mem_gb = 64
time_limit_h = 2
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.toml"
    p.write_text(text)
    return p


def test_bundled_gist_aix_is_table2_verbatim() -> None:
    c = default_cluster()
    assert [p.name for p in c.partitions] == ["A100", "V100"]
    assert [s.name for s in c.servers_in("A100")] == ["dgx-a100-1", "dgx-a100-2"]
    assert c.gpu_types() == ["a100", "v100"]
    assert c.partition_power_kw("A100") == 13.0 and c.partition_power_kw("V100") == 7.0
    # the DGX-1V's V100s are 32 GB (override), the DGX A100's are the catalog's 40 GB
    assert c.servers_in("V100")[0].gpu_mem() == 32.0
    assert c.servers_in("A100")[0].gpu_mem() == 40.0
    table2 = {  # Table 2: GPUs, CPU cores, mem GB, time limit h, lambda
        "s-A100": (2, 64, 256, 72, 0.125), "m-A100": (4, 128, 512, 168, 0.25),
        "l-A100": (8, 256, 1024, 336, 0.5), "f-A100": (16, 512, 2048, 504, 1.0),
        "s-V100": (2, 20, 128, 72, 0.125), "m-V100": (4, 40, 256, 168, 0.25),
        "l-V100": (8, 80, 512, 336, 0.5), "f-V100": (16, 160, 1024, 504, 1.0),
    }
    assert {f.name for f in c.flavors} == set(table2)
    for f in c.flavors:
        g, cpu, mem, t, lam = table2[f.name]
        assert (f.gpus, f.cpus, f.mem_gb, f.time_limit_h, f.rate) == (g, cpu, mem, t, lam)
        assert c.rate(f) == pytest.approx(f.gpus / 16)       # lambda = GPUs / 16
    assert [f.name for f in c.flavors_in("V100")] == ["s-V100", "m-V100", "l-V100", "f-V100"]


def test_bundled_by_name_and_valid_file(tmp_path: Path) -> None:
    assert load_cluster("gist-aix").name == "gist-aix"
    c = load_cluster(_write(tmp_path, VALID))
    assert isinstance(c, ClusterConfig)
    assert isinstance(c.servers[0], ServerSpec) and isinstance(c.flavors[0], FlavorSpec)
    assert c.partition_gpus("P") == 8
    assert c.rate("half") == 0.5                              # derived: 4 / 8
    assert c.gpu_types() == ["v100", "t4"]
    assert c.servers[1].power_kw == 0.0


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ('gpus = 4\ncpus = 32', 'gpus = 0\ncpus = 32', "servers[0].gpus"),
        ('gpu_type = "t4"', 'gpu_type = "tpu9"', "servers[1].gpu_type"),
        ('partition = "P"\ngpu_type = "t4"', 'partition = "Q"\ngpu_type = "t4"',
         "servers[1].partition"),
        ("time_limit_h = 2", "time_limit_h = 2\nrate = 0.125", "flavors[0].rate"),
        ("time_limit_h = 2", "time_limit_h = 2\ncolour = 3", "flavors[0].colour"),
        ('name = "half"\npartition = "P"\ngpus = 4', 'name = "half"\npartition = "P"\ngpus = 9',
         "flavors[0].gpus"),
        ('mem_gb = 128', 'mem_gb = "lots"', "servers[0].mem_gb"),
        ('name = "n2"', 'name = "n1"', "duplicate"),
    ],
)
def test_invalid_file_one_line_error_names_file_and_field(
    tmp_path: Path, old: str, new: str, field: str
) -> None:
    assert old in VALID
    p = _write(tmp_path, VALID.replace(old, new, 1))
    with pytest.raises(InputError) as e:
        load_cluster(p)
    msg = str(e.value)
    assert "\n" not in msg and str(p) in msg and field in msg


def test_unreadable_and_unknown(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not valid TOML"):
        load_cluster(_write(tmp_path, "name = [oops"))
    with pytest.raises(InputError, match="not found"):
        load_cluster(tmp_path / "nope.toml")
    c = load_cluster(_write(tmp_path, VALID))
    with pytest.raises(InputError, match="no partition"):
        c.servers_in("X")
    with pytest.raises(InputError, match="no flavor"):
        c.flavor("huge")
    with pytest.raises(InputError, match="partitions"):
        parse_cluster({"name": "x", "partitions": [], "servers": []})
