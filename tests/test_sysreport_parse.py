"""The guest's own /proc parsers (native/sysreport.c), built on this host and fed real texts.

sysreport.c is built with -DSYSREPORT_PARSE_MAIN (a main that reads a file as /proc's zoneinfo,
meminfo or iomem with the guest's own buffer size and writes the frames to stdout) and with
AddressSanitizer and UBSan, then fed this host's /proc texts, the texts guests reported
(tests/data/proc: a 32-bit x86 kernel's and armmp-lpae's with HighMem, arm64's, amd64's; the R
frames of `abibench system run --keep-reports`, extracted by bench/proc_texts.py) and generated
variants of them: zones and lines reordered, lines dropped or repeated, long lines, numbers
too large, a text cut at any byte. Every frame must be what an independent reference parser
below reads from the same bytes: the invariant "the measuring service reports only what it
read whole" (docs/reliability.md): a number only from a whole line that names its field, never
a field a zone did not give, never a prefix of a cut number.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.paths import cache_dir
from abibench.run.vm import verified_frames
from abibench.tools import native_tool

DATA = Path(__file__).parent / "data" / "proc"
# sysreport.c's buffers (smaps is read in pieces of LINE - 1 bytes)
CAP = {"zoneinfo": 65536, "meminfo": 16384, "iomem": 65536, "smaps_rollup": 4096,
       "status": 4096, "smaps": 0}
LINE = 1024
MAX_NAMES = 128
HOST = {k: Path("/proc/self" if k in ("smaps", "smaps_rollup", "status") else "/proc") / k
        for k in CAP}
COUNT_MAX = 10**12
ZONE_FIELDS = ("min", "low", "high", "spanned", "present", "managed", "protection")
MAX_ZONES = 16
PAGE_KB = 4

Frame = tuple[str, ...]


@functools.cache
def parser() -> Path:
    """sysreport.c's parsers behind a test main, with the sanitizers: any read out of bounds,
    overflow or undefined behaviour ends it with an error, which the tests see."""
    return native_tool("sysreport", cache_dir(), flags=(
        "-DSYSREPORT_PARSE_MAIN", "-Wno-unused-function", "-g", "-fsanitize=address,undefined",
        "-fno-sanitize-recover=all"))


def c_frames(kind: str, text: bytes, page_kb: int = PAGE_KB) -> list[Frame]:
    with tempfile.NamedTemporaryFile(prefix="proc-") as f:
        f.write(text)
        f.flush()
        proc = subprocess.run([str(parser()), kind, f.name, str(page_kb)], capture_output=True,
                              timeout=60, env={**os.environ, "ASAN_OPTIONS": "detect_leaks=0"},
                              check=False)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr.decode(errors="replace")[-800:]
    frames = verified_frames(proc.stdout)
    assert len(frames) == proc.stdout.count(b"\n")  # every line it wrote is a whole frame
    out = []
    for fr in frames:
        words = fr.split(" ")
        assert words[1] == "idle"
        out.append(tuple(words[2:]))
    return out


# ------------------------------------------------------------------ the reference, from the spec


def whole_lines(text: bytes, cap: int) -> list[str]:
    """What the guest reads (at most cap - 1 bytes, to a NUL), its whole lines only, non-empty."""
    text = text[:cap - 1].split(b"\0", 1)[0]
    text = text[:text.rfind(b"\n") + 1]
    return [ln for ln in text.decode("latin-1").split("\n") if ln]


def _count(s: str) -> int | None:
    return int(s) if len(s) <= 13 and s.isascii() and s.isdigit() and int(s) <= COUNT_MAX \
        else None


def _hex(s: str) -> str:
    return s.encode("latin-1").hex() or "-"


def ref_zoneinfo(text: bytes, page_kb: int = PAGE_KB) -> list[Frame]:
    zones: list[tuple[str, dict[str, int]]] = []
    for line in whole_lines(text, CAP["zoneinfo"]):
        head = re.fullmatch(r"Node ([0-9]+), zone +([A-Za-z0-9_]{1,31})", line)
        if head and _count(head[1]) is not None:
            if len(zones) == MAX_ZONES:
                break
            zones.append((head[2], {}))
            continue
        if not zones:
            continue
        fields, body = zones[-1][1], line.lstrip(" ")
        if body.startswith("protection: ("):
            rest = body[13:]
            while (num := re.match(r"[0-9]+", rest)) and (v := _count(num[0])) is not None:
                fields["protection"] = max(fields.get("protection", v), v)
                rest = rest[num.end():]
                if not rest.startswith(", "):
                    break
                rest = rest[2:]
        elif (m := re.fullmatch(r"(min|low|high|spanned|present|managed) +([0-9]+)", body)) \
                and (v := _count(m[2])) is not None:
            fields[m[1]] = v
    return [(_hex(name), f, str(fields[f] * page_kb))
            for name, fields in zones for f in ZONE_FIELDS if f in fields]


def ref_meminfo(text: bytes) -> list[Frame]:
    out: list[Frame] = []
    for line in whole_lines(text, CAP["meminfo"]):
        key, colon, rest = line.partition(":")
        m = re.fullmatch(r" *([0-9]+)( kB)?", rest)
        if colon and 1 <= len(key) <= 60 and m and (v := _count(m[1])) is not None:
            out.append((re.sub(r"[^A-Za-z0-9_]", "_", key), str(v)))
    return out


def ref_iomem(text: bytes) -> list[Frame]:
    out: list[Frame] = []
    for line in whole_lines(text, CAP["iomem"]):
        m = re.fullmatch(r" *([0-9A-Fa-f]{1,16})-([0-9A-Fa-f]{1,16}) : (.*)", line)
        if not m:
            continue
        a, b, name = int(m[1], 16), int(m[2], 16), m[3]
        if len(name) <= 127 and name.startswith("Kernel ") and a <= b and b - a < 999999999999999:
            out.append((_hex(name), str(b - a + 1)))
    return out


def _line_count(line: str, key: str, unit: str) -> int | None:
    """"Key:<spaces or tabs>N<unit>" as the whole line (its newline or not)."""
    m = re.fullmatch(re.escape(key) + r"[ \t]*([0-9]+)" + re.escape(unit) + "\n?", line)
    return _count(m[1]) if m else None


def _first_count(text: bytes, cap: int, key: str, unit: str) -> int | None:
    found = (_line_count(ln, key, unit) for ln in whole_lines(text, cap))
    return next((v for v in found if v is not None), None)


def ref_smaps_rollup(text: bytes) -> list[Frame]:
    pss = _first_count(text, CAP["smaps_rollup"], "Pss:", " kB")
    rss = _first_count(text, CAP["smaps_rollup"], "Rss:", " kB")
    return [] if pss is None or rss is None else [("1", str(pss), str(rss), "-", "-")]


def ref_status(text: bytes) -> list[Frame]:
    n = _first_count(text, CAP["status"], "Threads:", "")
    return [] if n is None else [("1", str(n))]


def pieces(text: bytes) -> list[tuple[str, bool, bool]]:
    """What fgets gives with a LINE-byte buffer: (piece, starts a line, ends its line)."""
    out, pos, first = [], 0, True
    while pos < len(text):
        nl = text.find(b"\n", pos, pos + LINE - 1)
        end = nl + 1 if nl >= 0 else min(pos + LINE - 1, len(text))
        piece = text[pos:end]
        out.append((piece.decode("latin-1"), first, piece.endswith(b"\n")))
        first, pos = piece.endswith(b"\n"), end
    return out


def _mapping_name(header: str, size_kb: int) -> str:
    # The range, then four fields (perms, offset, device, inode), then the name: C's isspace
    # is ASCII's, so the header is split as bytes.
    raw = header.encode("latin-1")
    m = re.match(rb"[0-9A-Fa-f]+-[0-9A-Fa-f]+(?:\s+\S+){4}\s*", raw)
    if m is None or m.end() == len(raw):
        return f"[anon {size_kb} kB]" if size_kb >= 8192 else "[anon]"
    return raw[m.end():][:159].split(b"\n")[0].decode("latin-1")


def ref_smaps(text: bytes) -> list[Frame]:
    table: dict[str, list[int]] = {}
    header, cur = "", None
    for piece, first, whole in pieces(text.split(b"\0", 1)[0]):
        if not first:
            continue
        if re.match(r"[0-9A-Fa-f]+-[0-9A-Fa-f]+ ", piece):
            header, cur = piece, None
            continue
        if not whole or not header:
            continue
        if (v := _line_count(piece, "Size:", " kB")) is not None:
            name = _mapping_name(header, v)
            if name not in table and len(table) >= MAX_NAMES - 1:
                name = "[other]"  # the last row: every name beyond the table's
            cur = table.setdefault(name, [0] * 5)
            cur[0] += 1
            cur[1] += v
        elif cur is not None:
            for i, key in ((2, "Rss:"), (3, "Pss:"), (4, "Anonymous:")):
                if (v := _line_count(piece, key, " kB")) is not None:
                    cur[i] += v
                    break
    return [("1", _hex(name), *map(str, sums)) for name, sums in table.items()]


REFERENCE = {"zoneinfo": ref_zoneinfo, "meminfo": ref_meminfo, "iomem": ref_iomem,
             "smaps": ref_smaps, "smaps_rollup": ref_smaps_rollup, "status": ref_status}


def agrees(kind: str, text: bytes) -> list[Frame]:
    got = c_frames(kind, text)
    assert got == REFERENCE[kind](text)
    return got


# ------------------------------------------------------------------ a guest's report, read back

_RAW = re.compile(r"R idle ((?:[0-9a-f]{2})+) ((?:[0-9a-f]{2})+)")
KIND = {"zoneinfo": "Z", "meminfo": "M", "iomem": "K"}


def raw_texts(report: bytes) -> dict[str, bytes]:
    """The raw /proc texts a guest's report holds (its R frames): file name -> text."""
    out = {}
    for frame in verified_frames(report):
        if (m := _RAW.fullmatch(frame)) is not None:
            name = bytes.fromhex(m[1]).decode("ascii", "replace")
            if name in KIND:
                out[name] = bytes.fromhex(m[2])
    return out


def guest_agrees(report: bytes, page_kb: int = PAGE_KB) -> bool:
    """The guest's idle Z, M and K frames (its own build of the parsers) are the frames this
    host's build reads from the guest's raw texts."""
    raws = raw_texts(report)
    frames = verified_frames(report)
    return set(raws) == set(KIND) and all(
        [tuple(f.split(" ")[2:]) for f in frames if f.startswith(f"{KIND[name]} idle ")]
        == c_frames(name, text, page_kb) for name, text in raws.items())


# ------------------------------------------------------------------------------ the real texts


@functools.cache
def real_texts(kind: str) -> dict[str, bytes]:
    """This host's /proc text of `kind` (read once: it changes as the host runs, and a
    generated case must be drawn from the same text when it is replayed) and every guest's."""
    texts = {f"host {kind}": HOST[kind].read_bytes()}
    for p in sorted(DATA.glob(f"*.{kind}")):
        texts[p.name] = p.read_bytes()
    return texts


@pytest.mark.parametrize("kind", sorted(CAP))
def test_real_texts_read_as_the_reference_reads_them(kind: str) -> None:
    for name, text in real_texts(kind).items():
        got = agrees(kind, text)
        assert got, f"{name}: nothing read"


def test_the_guests_zones_are_read_whole() -> None:
    # Every zone of every real text gives all seven fields: the 32-bit kernels' HighMem zone,
    # the zones without memory (Movable, Device) too.
    for name, text in real_texts("zoneinfo").items():
        frames = c_frames("zoneinfo", text)
        zones = {z for z, _, _ in frames}
        assert len(frames) == len(ZONE_FIELDS) * len(zones), name
        if name.startswith(("686-pae", "armmp-lpae")):
            assert b"HighMem".hex() in zones, name


# --------------------------------------------------------------------------- generated variants


def _blocks(text: bytes, kind: str) -> list[bytes]:
    """zoneinfo's zones (each from its "Node" line), or the lines of the other texts."""
    lines = text.splitlines(keepends=True)
    if kind != "zoneinfo":
        return lines
    blocks: list[bytes] = []
    for ln in lines:
        if ln.startswith(b"Node ") or not blocks:
            blocks.append(ln)
        else:
            blocks[-1] += ln
    return blocks


_NOISE = st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=40)


@st.composite
def variant(draw: st.DrawFn, kind: str) -> bytes:
    """A real text with its zones (or lines) reordered, lines dropped, repeated, lengthened or
    given numbers too large, and cut at any byte."""
    texts = real_texts(kind)
    text = texts[draw(st.sampled_from(sorted(texts)))]
    blocks = _blocks(text, kind)
    if draw(st.booleans()):
        blocks = draw(st.permutations(blocks))
    lines = b"".join(blocks).splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 6))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        what = draw(st.sampled_from(("drop", "repeat", "long", "big", "noise", "digits")))
        if what == "drop":
            del lines[i]
        elif what == "repeat":
            lines.insert(i, lines[i])
        elif what == "long":
            n = draw(st.sampled_from((40, 200, 5000, 70000)))
            lines[i] = lines[i].rstrip(b"\n") + b"x" * n + b"\n"
        elif what == "big":
            lines[i] = re.sub(rb"[0-9]+", lambda m: m[0] + b"0" * draw(st.integers(1, 12)),
                              lines[i], count=1)
        elif what == "noise":
            lines.insert(i, draw(_NOISE).encode("latin-1") + b"\n")
        else:  # a number's digits changed: the parsers must read each as written
            lines[i] = re.sub(rb"[0-9]+", str(draw(st.integers(0, 10**14))).encode(), lines[i],
                              count=1)
    out = b"".join(lines)
    return out[:draw(st.integers(0, len(out)))] if draw(st.booleans()) else out


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_zoneinfo_variants_read_as_the_reference_reads_them(data: st.DataObject) -> None:
    agrees("zoneinfo", data.draw(variant("zoneinfo")))


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_meminfo_variants_read_as_the_reference_reads_them(data: st.DataObject) -> None:
    agrees("meminfo", data.draw(variant("meminfo")))


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_iomem_variants_read_as_the_reference_reads_them(data: st.DataObject) -> None:
    agrees("iomem", data.draw(variant("iomem")))


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_a_process_texts_variants_read_as_the_reference_reads_them(data: st.DataObject) -> None:
    # smaps (a big process's mappings, read in pieces: a long file name is several), its
    # smaps_rollup (PSS, RSS) and status (threads).
    kind = data.draw(st.sampled_from(("smaps", "smaps", "smaps_rollup", "status")))
    agrees(kind, data.draw(variant(kind)))


def test_a_full_mapping_table_adds_no_mapping_to_another() -> None:
    # More names than the table's rows: the rest are summed as "[other]", the last row; before,
    # they were added to the 128th mapping's row, under its name.
    maps = [f"{i:x}000-{i:x}fff r--p 00000000 08:01 {i} /lib/l{i}.so\nSize: 4 kB\nRss: {i} kB\n"
            for i in range(1, 200)]
    got = agrees("smaps", "".join(maps).encode())
    assert len(got) == MAX_NAMES and got[-1][1] == b"[other]".hex()
    assert got[-2][1] == b"/lib/l127.so".hex() and got[-2][4] == "127"


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_a_zoneinfo_cut_anywhere_reports_no_field_beyond_the_cut(data: st.DataObject) -> None:
    # The bug this family is named for: a zone cut after "managed 12" of "managed 123456" gave
    # 12, and a zone without a field gave 0 for it. Now every frame is of a line wholly before
    # the cut, so it is also a frame of the whole text.
    texts = real_texts("zoneinfo")
    text = texts[data.draw(st.sampled_from(sorted(texts)))]
    cut = data.draw(st.integers(0, len(text)))
    whole = c_frames("zoneinfo", text)
    part = agrees("zoneinfo", text[:cut])
    assert set(part) <= set(whole)


_FIELD_LINE = re.compile(rb"^ *(min|low|high|spanned|present|managed|protection)\b.*$", re.M)


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_a_zoneinfo_cut_inside_a_fields_line_drops_that_line(data: st.DataObject) -> None:
    # The cut lands in a line that names a field (in its number, most often): a uniform cut
    # rarely does, and that line is the one that would give a prefix of a number.
    texts = real_texts("zoneinfo")
    text = texts[data.draw(st.sampled_from(sorted(texts)))]
    line = data.draw(st.sampled_from(list(_FIELD_LINE.finditer(text))))
    cut = data.draw(st.integers(line.start(), line.end() - 1))
    part = agrees("zoneinfo", text[:cut])
    assert set(part) <= set(c_frames("zoneinfo", text))


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(("Size: 99999 kB", "Rss: 77777 kB", "Pss: 55555 kB",
                        "2000-2fff r--p 00000000 08:01 9 /forged", "Anonymous: 3 kB")),
       st.integers(1, 3), st.integers(0, 40))
def test_a_long_file_name_is_never_read_as_lines(forged: str, pieces_before: int,
                                                 shift: int) -> None:
    # A process names its files: a name longer than the buffer comes in pieces, and a piece
    # that starts like a header or a field (at the buffer's boundary, or near it) is still
    # the name, never a line.
    head = "1000-1fff r--p 00000000 08:01 7 /"
    pad = "n" * (pieces_before * (LINE - 1) - len(head) + shift)
    text = f"{head}{pad}{forged}\nSize: 4 kB\nRss: 4 kB\nPss: 2 kB\n".encode()
    got = agrees("smaps", text)
    assert got == [("1", ("/" + pad + forged)[:159].encode().hex(), "1", "4", "4", "2", "0")]
