"""The GL workloads' parsers and profiles, on real outputs (tests/data/seeds/): glmark2's
per-scene results and ioquake3's timedemo line."""

from __future__ import annotations

from pathlib import Path

import pytest

from abibench.paths import PROFILES_DIR
from abibench.run.samples import ParseError, parse_metrics, validation_value
from abibench.workloads.parsers import (
    BUILTIN_PARSERS,
    glmark2_scene_key,
    parse_glmark2,
    parse_ioquake3_timedemo,
)
from abibench.workloads.profile import load_profile

DATA = Path(__file__).parents[1] / "data" / "seeds"
GLMARK2 = sorted(DATA.glob("glmark2-2023.01-*.txt"))
TIMEDEMO = sorted(DATA.glob("ioquake3-timedemo-*.txt"))


def test_registered() -> None:
    assert BUILTIN_PARSERS["glmark2"] is parse_glmark2
    assert BUILTIN_PARSERS["ioquake3-timedemo"] is parse_ioquake3_timedemo


@pytest.mark.parametrize("capture", GLMARK2, ids=lambda p: p.stem)
def test_glmark2_every_scene_of_the_default_set(capture: Path) -> None:
    values = parse_glmark2(capture.read_text())
    scenes = [k for k in values if not k.endswith("_ms") and k != "score"]
    assert len(scenes) == 33
    assert all(values[k] >= 1 and values[f"{k}_ms"] > 0 for k in scenes)
    # glmark2's score is the mean of the scenes' FPS (unrounded: the printed ones are whole)
    assert abs(values["score"] - sum(values[k] for k in scenes) / len(scenes)) < 2


def test_glmark2_known_values() -> None:
    values = parse_glmark2((DATA / "glmark2-2023.01-amd64.txt").read_text())
    assert values["build_use_vbo_false"] == 344 and values["build_use_vbo_false_ms"] == 2.913
    assert values["terrain"] == 2 and values["terrain_ms"] == 576.584
    assert values["score"] == 144
    # "duration=" that a run sets for every scene is not part of a scene's name
    assert glmark2_scene_key("build", "duration=2.0:use-vbo=true") == "build_use_vbo_true"
    assert glmark2_scene_key("terrain", "<default>") == "terrain"


def test_glmark2_unfinished_run_is_an_error() -> None:
    text = (DATA / "glmark2-2023.01-i386.txt").read_text()
    with pytest.raises(ValueError, match="Score"):
        parse_glmark2(text.split("=====\n                                  glmark2 Score")[0])


def test_glmark2_profile_reads_both_captures_and_checks_the_renderer() -> None:
    wl = load_profile(PROFILES_DIR / "glmark2.toml")
    checks = set()
    for capture in GLMARK2:
        text = capture.read_text()
        values = parse_metrics(wl.metrics, text)
        assert len(values) == len(wl.metrics) == 34  # the score and 33 scenes
        checks.add(validation_value(wl, text))
    assert checks == {"llvmpipe (LLVM 15.0.6"}
    other = (DATA / "glmark2-2023.01-amd64.txt").read_text().replace(
        "llvmpipe (LLVM 15.0.6, 256 bits)", "softpipe")
    with pytest.raises(ParseError, match="validation pattern"):
        validation_value(wl, other)  # another driver never passes for llvmpipe


def test_timedemo_line() -> None:
    line = "3398 frames 372.7 seconds 9.1 fps 28.0/109.7/1856.0/38.3 ms\n"
    values = parse_ioquake3_timedemo("Merman^7 was gunned down\n" + line + "----- Client Shutdown")
    assert values["frames"] == 3398 and values["seconds"] == 372.7 and values["fps"] == 9.1
    assert values["frame_max_ms"] == 1856.0 and values["frame_sd_ms"] == 38.3
    assert values["min_fps"] == pytest.approx(1000 / 1856.0)
    assert values["max_fps"] == pytest.approx(1000 / 28.0)
    with pytest.raises(ValueError, match="did not play to its end"):
        parse_ioquake3_timedemo("Merman^7 was gunned down\n----- Client Shutdown")
    with pytest.raises(ValueError, match="one demo per sample"):
        parse_ioquake3_timedemo(line + line)


@pytest.mark.parametrize("capture", TIMEDEMO, ids=lambda p: p.stem)
def test_openarena_profile_reads_the_captured_timedemo(capture: Path) -> None:
    wl = load_profile(PROFILES_DIR / "game-openarena.toml")
    text = capture.read_text()
    values = parse_metrics(wl.metrics, text)
    assert set(values) == {"fps", "min_fps", "max_fps", "frame_sd"}
    assert values["min_fps"] <= values["fps"] <= values["max_fps"]
    assert validation_value(wl, text) == "3398"  # demo088-test1's frames


def test_stderr_key(tmp_path: Path) -> None:
    from abibench.errors import ProfileError

    assert load_profile(PROFILES_DIR / "game-openarena.toml").merge_stderr
    assert not load_profile(PROFILES_DIR / "glmark2.toml").merge_stderr
    prof = tmp_path / "s.toml"
    prof.write_text('id = "s"\ntitle = "t"\n[debian]\npackages = ["x"]\n'
                    '[run]\ncommand = ["{bin}/x"]\nstderr = "both"\n')
    with pytest.raises(ProfileError, match=r"s.toml:\d+: stderr must be \"stdout\""):
        load_profile(prof)
