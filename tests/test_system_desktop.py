"""The desktop system (issue 28): what runs after boot, as profile fields and systemd units.

The boot itself is too heavy for the gate (bench/system_matrix.py desktop); here the profile's
loading, the image's package list and the unit files are checked as pure functions. Run
entries are generated: whatever text a profile gives, it either is refused in one line naming
the key, or enters a unit file as exactly one line of its setting ('%' escaped).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.abi import ABIS
from abibench.analyse.system import analyse
from abibench.errors import ProfileError
from abibench.obtain import sysunits
from abibench.obtain.sysimage import mmdebstrap_argv
from abibench.run.sysboot import (
    BOOT_ALLOWANCE_S,
    Combination,
    SysBoot,
    allowance_of,
    deadline_of,
    every_combination,
    parse_sysreport,
)
from abibench.run.sysrecord import boot_record
from abibench.text import one_line
from abibench.workloads.system import SYSTEMS_DIR, RunEntry, load_system, parse_system

from .sysframes import GuestPhase, guest_report, system_config


def test_the_desktop_profile_loads_with_its_page_and_figures() -> None:
    d = load_system("desktop")
    assert {"xvfb", "openbox", "chromium", "systemd-sysv"} <= set(d.packages)
    assert d.memory_mb == 2048 and [r.name for r in d.run] == ["xserver", "wm", "browser"]
    page = dict(d.files)["/usr/local/share/abibench/page.html"]
    assert b"abibench page loaded" in page and b"abibench page loaded" in d.ready.encode()
    assert "9222" in d.ready and all("--remote-debugging-port=9222" in r.command
                                     for r in d.run if r.name == "browser")
    pi = next(p for p in d.published if p.mb_32)
    assert pi.increase_pct == pytest.approx(100 * (196 / 103 - 1))
    # The Pi 400 figures moved to the desktop; the minimal system keeps the login prompt's.
    assert not any(p.mb_32 for p in load_system("minimal").published)


def test_the_image_key_changes_with_the_page_and_not_for_older_profiles() -> None:
    for name in ("minimal", "server"):
        assert "run" not in load_system(name).key_fields()  # their cached images stay valid
    d = load_system("desktop")
    other = d.__class__(**{**d.__dict__, "files": (("/usr/local/share/x", b"other"),)})
    assert d.key_fields() != other.key_fields() and "run" in d.key_fields()


def test_the_ready_script_extends_the_boot_allowance() -> None:
    d, m = load_system("desktop"), load_system("minimal")
    assert allowance_of(m) == BOOT_ALLOWANCE_S
    assert allowance_of(d) == BOOT_ALLOWANCE_S + d.ready_timeout_s
    assert deadline_of(d) > allowance_of(d) + d.settle_s


def _unit_lines(text: str) -> list[tuple[str, str]]:
    return [tuple(ln.split("=", 1)) for ln in text.splitlines()  # type: ignore[misc]
            if "=" in ln and not ln.startswith("[")]


_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.fixed_dictionaries({"name": st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True),
                                       "command": st.one_of(_TEXT, _TEXT.map(lambda s: "/bin/" + s)),
                                       "environment": st.lists(_TEXT, max_size=2),
                                       "wait_for": st.one_of(st.just(""), _TEXT)}),
                min_size=1, max_size=4))
def test_run_entries_become_units_of_exactly_their_settings(items: list[dict[str, Any]]) -> None:
    for i, item in enumerate(items):
        item["after"] = [items[0]["name"]] if i and items[0]["name"] != item["name"] else []
    table = {"run": items, "ready": "exit 0"}
    try:
        profile = parse_system("t", table, "t.toml")
    except ProfileError as exc:
        msg = str(exc)
        assert "\n" not in msg and msg.startswith("t.toml: [[system.run]]")
        return
    units = sysunits.units(profile)
    assert set(units) == {*(sysunits.unit_name(r) for r in profile.run), sysunits.READY_UNIT}
    for r in profile.run:
        settings_ = _unit_lines(units[sysunits.unit_name(r)])
        execs = [v for k, v in settings_ if k == "ExecStart"]
        assert execs == [r.command.replace("%", "%%")]
        envs = [v for k, v in settings_ if k == "Environment"]
        assert envs == [f'"{e.replace("%", "%%")}"' for e in r.environment]
        assert ("WantedBy", "multi-user.target") in settings_
        for a in r.after:
            assert ("After", f"abibench-run-{a}.service") in settings_
    ready = dict(_unit_lines(units[sysunits.READY_UNIT]))
    assert ready["Type"] == "oneshot" and ready["WantedBy"] == "multi-user.target"
    assert set(ready["After"].split()) == {sysunits.unit_name(r) for r in profile.run}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 1100), max_size=30, unique=True),
       st.lists(st.integers(0, 1100), max_size=30, unique=True))
def test_a_new_user_takes_an_id_no_user_or_group_has(uids: list[int], gids: list[int]) -> None:
    passwd = "".join(f"u{u}:x:{u}:{u}::/:/bin/sh\n" for u in uids)
    group = "".join(f"g{g}:x:{g}:\n" for g in gids)
    pw, gr, sh = sysunits.user_lines("abibench", passwd, group)
    uid = int(pw.split(":")[2])
    assert uid >= sysunits.FIRST_UID and uid not in uids and uid not in gids
    assert gr == f"abibench:x:{uid}:" and sh.startswith("abibench:!:")
    profile = parse_system("t", {"run": [{"name": "a", "command": "/bin/true",
                                          "user": "abibench"},
                                         {"name": "b", "command": "/bin/true"}]}, "t.toml")
    assert sysunits.new_users(profile, passwd) == ["abibench", "root"]
    assert sysunits.new_users(profile, passwd + pw + "\nroot:x:0:0::/root:/bin/sh\n") == []


@pytest.mark.parametrize("files", [{"/tmp/x": "desktop/page.html"},
                                   {"/usr/local/share/x": "../minimal.toml"},
                                   {"/usr/local/share/x": "/etc/passwd"},
                                   {"/usr/local/../etc/x": "desktop/page.html"},
                                   {"/usr/local/share/x": "desktop/none.html"}])
def test_a_packed_file_outside_its_places_is_refused(files: dict[str, str]) -> None:
    with pytest.raises(ProfileError, match=r"^t\.toml: \[system\.files\] "):
        parse_system("t", {"files": files}, "t.toml", base=SYSTEMS_DIR)


@pytest.mark.skipif(os.geteuid() != 0, reason="an image's users' homes are owned by them")
def test_install_writes_users_files_units_and_ready(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (tmp_path / "etc/group").write_text("root:x:0:\n")
    (tmp_path / "etc/shadow").write_text("root:*:19000:0:99999:7:::\n")
    d = load_system("desktop")
    sysunits.install(tmp_path, d)
    assert "abibench:x:1000:1000:" in (tmp_path / "etc/passwd").read_text()
    assert (tmp_path / "home/abibench").stat().st_uid == 1000
    wants = tmp_path / "etc/systemd/system/multi-user.target.wants"
    assert {p.name for p in wants.iterdir()} == set(sysunits.units(d))
    assert (tmp_path / "etc/abibench/ready").read_text() == d.ready
    assert (tmp_path / "usr/local/share/abibench/page.html").read_bytes() == \
        dict(d.files)["/usr/local/share/abibench/page.html"]
    assert isinstance(d.run[0], RunEntry)


def test_every_abi_gets_the_same_desktop_package_list() -> None:
    # Every userspace a system boots (x86's and ARM's, read from the ABI table, so a new row
    # is covered): one package list, nothing replaced for an architecture.
    d = load_system("desktop")
    arches = {ABIS[c.userspace].debian_arch for c in every_combination()}
    assert {"i386", "amd64", "armhf", "arm64"} <= arches
    argvs = {arch: mmdebstrap_argv("mmdebstrap", arch, d.release, d.packages, Path("/r"), "u")
             for arch in arches}
    include = {arch: next(a for a in argv if a.startswith("--include=")).split("=", 1)[1]
               for arch, argv in argvs.items()}
    assert set(include.values()) == {"chromium,openbox,systemd-sysv,xvfb"}


# ------------------------------------------------------------------ the ready script's page check
#
# The family: a readiness answer read before it is whole. The DevTools server keeps its
# connection open, so only the answer's own length says when it is complete; a reader bounded by
# a fixed few seconds read an emulated browser's slow answer in part, as "not loaded", forever.
# Invariant: the profile's page check reads the answer to its Content-Length (however it is cut
# and however slowly it comes, up to its generous bound) and says "loaded" exactly when the body
# names the page's title. Generated here: headers (order, case, extras), bodies with and without
# the title, the cuts between the pieces the server sends, and small delays between them.

TITLE = "abibench page loaded"


def _page_check(port: int) -> str:
    """The profile's own page_loaded function, aimed at `port`, called once."""
    ready = load_system("desktop").ready
    func = ready[:ready.index("until page_loaded")]
    assert "9222" in func
    return func.replace("9222", str(port)) + \
        "page_loaded 2>/dev/null; echo \"rc=$?\"; echo \"answer=$ANSWER\"\n"


def _serve_once(sock: socket.socket, pieces: list[bytes], delays: list[float],
                got: list[bytes]) -> None:
    conn, _ = sock.accept()
    with conn:
        conn.settimeout(10)
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = conn.recv(4096)
            if not chunk:
                return
            request += chunk
        got.append(request)
        for piece, delay in zip(pieces, delays, strict=True):
            time.sleep(delay)  # a slow browser: not a timing assertion, nothing is timed
            conn.sendall(piece)
        with contextlib.suppress(OSError):
            conn.recv(1)  # like DevTools, never close first: wait for the client to


_HEADER = st.sampled_from(["Content-Type: application/json; charset=UTF-8",
                           "Cache-Control: no-cache", "X-Extra: content-length: 1"])


@settings(max_examples=15, deadline=None)
@given(body_words=st.lists(st.sampled_from(['{"title": "abibench page"}', TITLE, "[", "]",
                                            '"url": "file:///x"', "ü", "\\n"]), max_size=6),
       length_name=st.sampled_from(["Content-Length", "content-length", "CONTENT-LENGTH"]),
       extras=st.lists(_HEADER, max_size=2), data=st.data())
def test_the_page_check_reads_the_whole_answer_and_only_it(
        body_words: list[str], length_name: str, extras: list[str], data: st.DataObject) -> None:
    body = " ".join(body_words).encode()
    head = "\r\n".join(["HTTP/1.1 200 OK", *extras, f"{length_name}: {len(body)}", "", ""])
    answer = head.encode() + body
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(answer) - 1)), max_size=4)))
    pieces = [answer[a:b] for a, b in zip([0, *cuts], [*cuts, len(answer)], strict=True)]
    delays = data.draw(st.lists(st.sampled_from([0.0, 0.01, 0.05]), min_size=len(pieces),
                                max_size=len(pieces)))
    got: list[bytes] = []
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
        server = threading.Thread(target=_serve_once, args=(sock, pieces, delays, got))
        server.start()
        out = subprocess.run(["bash", "-c", _page_check(port)], capture_output=True, text=True,
                             timeout=30, check=False)
        server.join(10)
    assert got and got[0].startswith(b"GET /json/list HTTP/1.1\r\n")
    rc, saw = out.stdout.splitlines()
    assert rc == ("rc=0" if TITLE.encode() in body else "rc=1")
    # What the check saw, in its one line: the page, or the answer's status, length and titles.
    if TITLE.encode() in body:
        assert saw == "answer=the page has loaded"
    else:
        titles = "abibench page; " * body_words.count('{"title": "abibench page"}') or "none"
        assert saw == (f"answer=DevTools answered 'HTTP/1.1 200 OK' with {len(body)} of "
                          f"{len(body)} bytes, no page titled so; titles: {titles}")


def test_the_page_check_says_not_loaded_while_nothing_listens() -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]  # closed again below: a port nothing listens on
    out = subprocess.run(["bash", "-c", _page_check(port)], capture_output=True, text=True,
                         timeout=30, check=False)
    assert out.stdout.splitlines() == ["rc=1", f"answer=no connection to DevTools on 127.0.0.1:{port}"]


# ------------------------------------------------- a system that never became ready says why
#
# The family: a boot that did not settle with no word of why (the i386 desktop measured
# `degraded` after 2,400 s, its reason only in a journal that died with the guest). Invariant:
# the ready check's last line travels with the report (native/sysreport.c's R frame, from the one
# file the check rewrites), is stored with its phase, and every phase measured other than
# `running` names it as a problem, in one clean line. Generated: any bytes as the line, any state.


@settings(max_examples=40, deadline=None)
@given(ready=st.binary(max_size=600),
       state=st.sampled_from([b"running", b"degraded", b"starting", b"maintenance"]))
def test_a_system_never_ready_says_what_its_last_check_saw(ready: bytes, state: bytes) -> None:
    idle = GuestPhase({"MemTotal": 2_000_000, "MemAvailable": 1_500_000}, state=state,
                      ready=ready)
    report = parse_sysreport(guest_report({"idle": idle}))
    said = report.phases["idle"].ready
    assert said == one_line(ready.decode("utf-8", "replace"))[:400]
    boot = boot_record(0, SysBoot(Combination("amd64", "i386"), report, 300.0, "powered off", ""))
    assert boot.phases["idle"].ready == said
    problems = analyse(system_config(("amd64:i386",), 1), [boot]).problems
    found = [p for p in problems if "the ready check last said" in p]
    if state != b"running" and said:
        assert found == [f"amd64 kernel + i386: boot 1, idle {state.decode()!r}: the ready check "
                         f"last said: {one_line(said)[:300]}"]
    else:
        assert found == []
    assert all(p == one_line(p) for p in problems)


def test_the_browser_names_each_switch_once() -> None:
    """Chromium keeps one value per switch (the last): a second --enable-features or
    --disable-features would silently drop the first list (the network service back in a
    process of its own, or the on-device model service back at start)."""
    browser = next(r for r in load_system("desktop").run if r.name == "browser")
    switches = [w.split("=", 1)[0] for w in browser.command.split() if w.startswith("--")]
    assert len(switches) == len(set(switches))
    assert "--enable-features=NetworkServiceInProcess2" in browser.command.split()
