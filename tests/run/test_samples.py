"""A program's output turned into a sample: numbers that are not finite fail the sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from abibench.errors import ProfileError
from abibench.run.launcher import RawResult
from abibench.run.samples import sample_from
from abibench.text import MARKER
from abibench.workloads.profile import Workload, load_profile

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _raw(stdout: str = "", *, code: int = 0, stderr: str = "", wall: float = 1.0,
         user: float = 0.9, sys: float = 0.0) -> RawResult:
    return RawResult("exited", code, 0, wall, user, sys, 1000, 0, 0, 0, "d" * 64, stdout, stderr)


def _variant(tmp_path: Path, extra: str) -> Path:
    """The hostile profile with one more line in its metric, beside a copy of its source."""
    text = (FIXTURES / "hostile.toml").read_text().replace(
        'better = "higher"', f'better = "higher"\n{extra}')
    (tmp_path / "hostile.c").write_bytes((FIXTURES / "hostile.c").read_bytes())
    (tmp_path / "variant.toml").write_text(text)
    return tmp_path / "variant.toml"


def _sample(wl: Workload, raw: RawResult) -> tuple[str, str | None, dict[str, float]]:
    s = sample_from(raw, wl, "r", "x86_64", 1, 0, False, "", 0, [])
    return s.status, s.error, s.metrics


@pytest.fixture(scope="module")
def hostile() -> Workload:
    return load_profile(FIXTURES / "hostile.toml")


def test_a_finite_metric_is_an_ok_sample(hostile: Workload) -> None:
    assert _sample(hostile, _raw("value: 5\nchecksum: same\n")) == ("ok", None, {"value": 5.0})
    assert _sample(hostile, _raw("value: -5e300\nchecksum: same\n"))[0] == "ok"


@pytest.mark.parametrize("printed", ["nan", "NaN", "inf", "-inf", "Infinity", "1e999", "-1e400"])
def test_a_metric_that_is_not_finite_fails_the_sample(hostile: Workload, printed: str) -> None:
    status, error, metrics = _sample(hostile, _raw(f"value: {printed}\nchecksum: same\n"))
    assert status == "failed" and metrics == {}
    assert error == f"metric 'value': '{printed}' is not a finite number"


def test_a_scale_that_overflows_fails_the_sample(tmp_path: Path) -> None:
    wl = load_profile(_variant(tmp_path, "scale = 1e300"))
    status, error, _ = _sample(wl, _raw("value: 1e10\nchecksum: same\n"))
    assert status == "failed"
    assert error == "metric 'value': '1e10' times its scale 1e+300 is not a finite number"


@pytest.mark.parametrize("scale", ["nan", "inf", "-inf", "0", "true"])
def test_a_scale_must_be_a_positive_finite_number(tmp_path: Path, scale: str) -> None:
    with pytest.raises(ProfileError, match="scale must be a positive number"):
        load_profile(_variant(tmp_path, f"scale = {scale}"))


@pytest.mark.parametrize("field", ["wall", "user", "sys"])
def test_times_that_are_not_finite_fail_the_sample_and_are_not_stored(
        hostile: Workload, field: str) -> None:
    times = {"wall": 1.0, "user": 0.9, "sys": 0.0, field: float("nan")}
    raw = _raw("value: 5\nchecksum: same\n", wall=times["wall"], user=times["user"],
               sys=times["sys"])
    s = sample_from(raw, hostile, "r", "x86_64", 1, 0, False, "", 0, [])
    assert s.status == "failed" and not s.counted
    assert s.error == f"{field} time nan is not a finite number"
    assert s.value(field) == 0.0  # a number JSON and SQLite keep; the sample does not count


def test_the_failure_reason_is_one_clean_line(hostile: Workload) -> None:
    stderr = "starting\n\x1b]0;pwned\x07\x1b[2Jboom \x9b31m[bold]x[/bold]\u202e\r\n"
    status, error, _ = _sample(hostile, _raw(code=2, stderr=stderr))
    assert status == "failed"
    assert error == f"exit code 2: boom [bold]x[/bold]{MARKER}"
