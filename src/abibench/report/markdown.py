"""Markdown report: for READMEs, issue threads and the set-up script's default run."""

from __future__ import annotations

from typing import Any

from ..analyse import WorkloadResult
from . import formatting as fmt


def _esc(text: object) -> str:
    """Table cells must not break the table or inject markup."""
    return (str(text).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")
            .replace(">", "&gt;").replace("\n", " "))


def render(doc: dict[str, Any], results: list[WorkloadResult]) -> str:
    run, hostctx = doc["run"], doc["host"]
    lines = [f"# abibench run {_esc(run['id'])}", ""]
    lines += [
        f"- host: {_esc(hostctx.get('cpu_model'))}, {hostctx.get('cpus_online')} CPUs, kernel "
        f"{_esc(hostctx.get('kernel_release'))} ({hostctx.get('kernel_bits')}-bit), "
        f"{_esc(hostctx.get('os_release'))}",
        f"- compilers: {_esc('; '.join(hostctx.get('compilers', {}).values()))}",
        f"- governor: {_esc(hostctx.get('governor') or 'not exposed')}; started "
        f"{_esc(run['started'])}, status {_esc(run['status'])}",
        f"- flags: `{_esc(' '.join(run['config'].get('cflags', [])))}` plus each ABI's own flag",
        "",
    ]
    for w in doc.get("warnings", []):
        where = f"{w['workload']}: " if w.get("workload") else ""
        lines.append(f"> warning: {_esc(where)}{_esc(w['message'])}")
    for res in results:
        better = "higher is better" if res.better == "higher" else "lower is better"
        lines += ["", f"## {_esc(res.id)}: {_esc(res.title)}", "",
                  f"Primary metric `{_esc(res.primary)}` ({_esc(res.unit)}, {better}).", "",
                  "| ABI | state | n | median | min–max | peak RSS | file size | text |",
                  "|---|---|--:|--:|--:|--:|--:|--:|"]
        for r in res.rows:
            s = r.summary
            state = r.state if r.state == "ok" else f"{r.state}: {r.reason or ''}"
            lines.append(
                f"| {_esc(r.label)} | {_esc(state)} | {r.n or '-'} | "
                f"{fmt.si(s.median, res.unit) if s else '-'} | "
                f"{(fmt.si(s.min, res.unit) + ' – ' + fmt.si(s.max, res.unit)) if s else '-'} | "
                f"{fmt.kib(r.rss_kb)} | {fmt.size(r.size)} | {fmt.size(r.text)} |")
        lines.append("")
        for c in res.comparisons + res.memory:
            invalid = "**INVALID: outputs differ** — " if res.validation == "miscompare" else ""
            lines.append(f"- {_esc(c.a)}/{_esc(c.b)} `{_esc(c.metric)}` ratio "
                         f"{fmt.ratio(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high)}: "
                         f"{invalid}{_esc(c.verdict.text)}")
        lines.append(f"- output check: {_esc(res.validation)} — {_esc(res.validation_detail)}")
        if res.stop_reason:
            lines.append(f"- stopped: {_esc(res.stop_reason)}")
    return "\n".join(lines) + "\n"
