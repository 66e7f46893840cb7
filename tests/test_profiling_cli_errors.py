"""``python -m gpuscope.profiling.cli`` reports bad input as ``gpuscope`` does: one line, exit 2."""

from __future__ import annotations

import pytest

from gpuscope.profiling.cli import main


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
