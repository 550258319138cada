"""One sample of a [browser] workload: a fresh browser, one page, the result it leaves.

For every sample:

1. a scratch directory inside the sysroot holds the browser's profile and home, so no state
   carries over from one sample to the next (nothing is written into the sysroot itself);
2. a static HTTP server (run/webserver.py) starts on 127.0.0.1 and a free port, serving
   abibench's own pages (pages/) and the directories of [browser] serve at /vendor/NAME/;
3. the launcher starts the browser inside the target's sysroot in namespaces of its own (the
   sandbox's `private` mode), with a DevTools port on 127.0.0.1 and the sample's own memory
   cgroup when the profile measures the tree;
4. a driver thread waits for the browser's DevTools port, opens the page, waits for the page to
   say it is done (pages/harness.js), reads its result and closes the browser; the browser's
   exit ends the sample. A page that fails, or a browser that stops answering, makes the
   driver tell the launcher to stop the sample (run/launcher.py's Stopper);
5. the page's result, as indented JSON with sorted keys, is what the profile's metrics and
   [validate] read, as if the browser had printed it; the HTTP server is stopped by its PID and
   the scratch directory removed, on every path.

The sample's times are the browser's whole life (start-up, page, shutdown); the page's own
figures (operations per second, Octane's scores) are its metrics.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import UsageError
from ..paths import PAGES_DIR
from ..probe.memory import TreeAccounting
from ..records import JSONDict
from ..text import one_line
from ..workloads.profile import substitute
from ..workspace import owned_dir
from .cdp import Cancelled, CdpError, Session, close_browser, run_page, wait_for_endpoint
from .launcher import How, RawResult, Stopper, run_sample
from .placement import Placement
from .webserver import StaticServer

# Added to the profile's command: DevTools on loopback only, on a port the browser picks and
# writes to its profile directory, and a blank first page the driver then navigates.
DEVTOOLS_FLAGS = ("--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0")
DRIVER_GRACE_S = 30.0  # the launcher's timeout comes first; the driver's is only a guard


@dataclass
class PageOutcome:
    """What the driver learnt: the page's result, or why there is none."""

    result: JSONDict | None = None
    error: str | None = None


def _drive(profile: Path, url: str, deadline: float, cancel: threading.Event,
           stopper: Stopper, out: PageOutcome) -> None:
    try:
        endpoint = wait_for_endpoint(profile, deadline, cancel)
        with Session(endpoint, deadline, cancel) as session:
            try:
                out.result = run_page(session, url)
            finally:
                close_browser(session)
    except Cancelled as exc:
        out.error = str(exc)  # the browser ended by itself: the launcher's status says how
    except (CdpError, OSError, ValueError) as exc:
        out.error = str(exc)
        stopper.stop()  # the browser may still run: the launcher kills its whole tree


def page_url(pl: Placement, web: StaticServer) -> str:
    spec = pl.wl.browser
    assert spec is not None
    return web.url(substitute(spec.page, pl.host_values()))


def served(pl: Placement) -> dict[str, Path]:
    """URL prefix -> directory: abibench's pages at /, [browser] serve at /vendor/NAME/."""
    spec = pl.wl.browser
    assert spec is not None
    mounts = {"": PAGES_DIR}
    values = pl.host_values()
    for name, template in spec.serve:
        where = Path(substitute(template, values))
        if not where.is_dir():
            raise UsageError(f"[browser] serve {name} = {template!r}: {where} is not a "
                             "directory (did the setup step write it?)")
        mounts[f"vendor/{name}"] = where
    return mounts


def with_result(raw: RawResult, out: PageOutcome) -> RawResult:
    """The launcher's result with the page's: its JSON as the output, or why it failed."""
    if raw.status in ("timeout", "interrupted"):
        return raw  # the launcher's reason stands
    if out.result is None:
        why = out.error or "the page left no result"
        return replace(raw, failure=f"browser page: {one_line(why)[:300]}")
    page_error = out.result.get("error")
    if page_error:
        return replace(raw, failure=f"the page failed: {one_line(str(page_error))[:300]}")
    text = json.dumps(out.result, indent=1, sort_keys=True) + "\n"
    return replace(raw, stdout=text,
                   stdout_digest=hashlib.sha256(text.encode()).hexdigest())


def run_browser_sample(pl: Placement, argv: list[str], env: dict[str, str], timeout_s: float,
                       launch: Path, how: How,
                       tree: TreeAccounting | None = None) -> RawResult:
    """One browser, one page: the sample, with the page's result as its output."""
    runner = pl.runner
    if runner is None or pl.wl.browser is None:
        raise UsageError(f"{pl.wl.id}: a [browser] workload runs its browser from a Debian "
                         "sysroot: use --provenance debian")
    with contextlib.ExitStack() as stack:
        # Owned by this process (workspace.py): removed on every exit, or by the next run.
        host_dir = stack.enter_context(owned_dir("browser", pl.work))
        inner_dir = f"{pl.inner_work}/{host_dir.name}"
        for sub in ("profile", "home"):
            (host_dir / sub).mkdir()
        web = stack.enter_context(StaticServer(served(pl)))
        url = page_url(pl, web)
        full = runner.wrap([*argv, f"--user-data-dir={inner_dir}/profile", *DEVTOOLS_FLAGS,
                            "about:blank"])
        # Its home in the scratch too: what a browser keeps there (certificate databases,
        # caches) must not carry over between samples or be written into the sysroot.
        env = {**env, "HOME": f"{inner_dir}/home", "XDG_CONFIG_HOME": f"{inner_dir}/home/.config",
               "XDG_CACHE_HOME": f"{inner_dir}/home/.cache"}
        out = PageOutcome()
        cancel, stopper = threading.Event(), Stopper()
        deadline = time.monotonic() + timeout_s * how.repeat + DRIVER_GRACE_S
        driver = threading.Thread(target=_drive, name="abibench-browser-driver",
                                  args=(host_dir / "profile", url, deadline, cancel, stopper, out),
                                  daemon=True)
        driver.start()
        try:
            raw = run_sample(full, cwd=pl.work, env=env, timeout_s=timeout_s, launch=launch,
                             how=how, tree=tree, stopper=stopper)
        finally:
            # The browser has ended (or the sample was interrupted): the driver's waits end too.
            cancel.set()
            driver.join()
        return with_result(raw, out)
