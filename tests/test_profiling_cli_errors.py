"""``gpuscope profile`` reports bad input as one line with exit code 2; ``profile steps`` checks
its campaign before it imports torch."""

from __future__ import annotations

import pytest

from gpuscope.cli import main


@pytest.mark.parametrize("value", ["-3", "nan", "1e30"])
def test_bounded_int_option_is_one_line(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    # --gpus is a plain int option: the shared bounds (gpuscope.cli._bound_numbers) apply here too
    assert main(["profile", "run", "--gpus", value]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--gpus" in err and "Traceback" not in err


def test_oserror_is_one_line(tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import argparse

    def denied(args: object) -> int:  # what a command hit by a read-only or vanished file raises
        raise PermissionError(13, "Permission denied", str(tmp_path / "ledger.sqlite"))

    parse = argparse.ArgumentParser.parse_args

    def parse_then_swap(self, *a, **k):  # type: ignore[no-untyped-def]
        ns = parse(self, *a, **k)
        if getattr(ns, "func", None) is not None:  # the real parser, only the command swapped
            ns.func = denied
        return ns

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_swap)
    assert main(["profile", "build-dataset", "--runs", str(tmp_path), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpuscope: error: ") and "Permission denied" in err and "\n" not in err


def test_profile_steps_checks_the_campaign_before_torch(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    code = ("import sys; from gpuscope.cli import main; "
            f"rc = main(['profile', 'steps', {str(tmp_path / 'nope.toml')!r}, '-o', "
            f"{str(tmp_path / 's.csv')!r}]); print(rc, 'torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["2", "False"]
    assert proc.stderr.startswith("gpuscope: error: ") and proc.stderr.count("\n") == 1


def test_profile_steps_measures_a_campaign(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import csv
    import json

    camp = tmp_path / "c.toml"
    camp.write_text('[campaign]\nname = "one"\noptimizers = ["sgd"]\nbatch_sizes = [2]\n'
                    'epochs = [1]\n[[matrix]]\nmodels = ["lenet"]\ndatasets = ["cifar10"]\n')
    out = tmp_path / "steps.csv"
    argv = ["profile", "steps", str(camp), "-o", str(out), "--device", "cpu",
            "--target-s", "0.05", "--quiet"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == {"steps": str(out), "measured": 1,
                                                   "campaign_jobs": 1}
    (row,) = csv.DictReader(out.open())
    assert row["status"] == "ok" and row["model"] == "lenet" and float(row["step_s"]) > 0
    assert main(argv) == 0 and json.loads(capsys.readouterr().out)["measured"] == 0  # resumed
    assert main([*argv[:5], "--device", "gpu0"]) == 2
    assert "not a torch device" in capsys.readouterr().err
