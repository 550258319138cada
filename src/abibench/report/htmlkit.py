"""The markup every HTML page is built with: :func:`h` escapes every child and attribute
that is not already :class:`Html`; the page's style and Content-Security-Policy."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
       "form-action 'none'")


class Html(str):
    """Markup that is safe to insert as it is."""


def esc(value: object) -> Html:
    return Html(escape(str(value), quote=True))


def _children(items: Iterable[object]) -> Iterable[str]:
    for c in items:
        if c is None or c is False:
            continue
        if isinstance(c, Html):
            yield c
        elif isinstance(c, list | tuple):
            yield from _children(c)
        else:
            yield esc(c)


def h(tag: str, *children: object, **attrs: object) -> Html:
    """<tag attrs>children</tag>; `class_` is class, `aria_label` is aria-label."""
    parts = [tag]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        name = key.rstrip("_").replace("_", "-")
        parts.append(name if value is True else f'{name}="{esc(value)}"')
    inner = "".join(_children(children))
    if tag in ("meta", "br", "col", "hr"):
        return Html(f"<{' '.join(parts)}>")
    return Html(f"<{' '.join(parts)}>{inner}</{tag}>")


def join(items: Iterable[object]) -> Html:
    return Html("".join(_children(items)))


STYLE = """
:root{--fg:#1d2127;--muted:#5b6470;--line:#d9dde3;--bg:#ffffff;--soft:#f4f6f8;
--good:#1e7b34;--bad:#b3261e;--warn:#8a5a00}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI","DejaVu Sans",sans-serif;
color:var(--fg);background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:12px 18px 40px}
header{background:#24303f;color:#fff;padding:14px 18px}
header h1{margin:0;font-size:1.35rem;max-width:1180px;margin:0 auto;overflow-wrap:anywhere}
header p{margin:4px auto 0;max-width:1180px;color:#cfd6df;font-size:.85rem;overflow-wrap:anywhere}
nav{max-width:1180px;margin:8px auto 0;display:flex;flex-wrap:wrap;gap:4px 14px;font-size:.9rem}
nav a{color:#fff}
h2{border-bottom:2px solid var(--line);padding-bottom:4px;margin-top:34px}
h3{margin:26px 0 6px;overflow-wrap:anywhere}
section{scroll-margin-top:8px}
.muted{color:var(--muted)}
.tablewrap{overflow-x:auto;margin:8px 0 12px}
table{border-collapse:collapse;font-size:.88rem;min-width:50%}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td:first-child{min-width:11ch}
td.wrap{overflow-wrap:anywhere;max-width:60ch}
code,.mono{font-family:"DejaVu Sans Mono",ui-monospace,monospace;font-size:.84rem;
overflow-wrap:anywhere}
ul.verdicts{list-style:none;padding:0;margin:6px 0}
ul.verdicts li{margin:6px 0}
.badge{display:inline-block;border:1px solid var(--line);border-left:6px solid #999;
border-radius:4px;padding:2px 8px;margin:2px 4px 2px 0;background:var(--soft)}
.badge.sig{background:#eef7f0}
.badge.none{color:var(--muted)}
.badge.invalid{border-left-color:var(--bad);background:#fdecea;color:var(--bad);font-weight:600}
.badge.missing{border-left-color:var(--warn);background:#fff6e5;color:var(--warn)}
.sw{white-space:nowrap}
.swatch{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:4px;
vertical-align:-1px}
.pos{color:var(--good)}.neg{color:var(--bad)}
ul.warnings{padding-left:1.2em}
ul.warnings li{color:var(--warn)}
.bad{color:var(--bad);font-weight:600}
.ok{color:var(--good)}
.charts{display:flex;flex-wrap:wrap;gap:10px;margin:8px 0}
figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:4px;background:#fff}
figure.curve{max-width:640px}
.charts figure{flex:1 1 300px;max-width:390px}
figure svg.chart{display:block;width:100%;height:auto}
figure.wide{max-width:760px}
figcaption{font-size:.8rem;color:var(--muted);padding:2px 4px}
details{margin:6px 0}
summary{cursor:pointer}
a.download{display:inline-block;padding:6px 12px;border:1px solid #24303f;border-radius:5px;
text-decoration:none;color:#24303f;font-weight:600}
footer{color:var(--muted);font-size:.8rem;margin-top:40px}
@media (max-width:600px){body{font-size:14px}main{padding:8px 10px 30px}
.charts figure{max-width:100%}}
"""


def table(head: Sequence[object], rows: Sequence[Sequence[object]], num: set[int] | None = None,
           cls: str | None = None) -> Html:
    num = num or set()
    ths = [h("th", c, class_="num" if i in num else None) for i, c in enumerate(head)]
    trs = [h("tr", *[h("td", c, class_="num" if i in num else None) for i, c in enumerate(r)])
           for r in rows]
    return h("div", h("table", h("thead", h("tr", *ths)), h("tbody", *trs), class_=cls),
             class_="tablewrap")
