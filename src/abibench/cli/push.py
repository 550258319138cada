"""`abibench push`: the local spool of a shared database uploaded."""

from __future__ import annotations

import argparse

from ..errors import EXIT_OK, UsageError
from ..store.open import DB_ENV
from ..store.url import is_url
from .argtypes import Commands
from .options import _db_option
from .printing import _print_json, _say


def add_parser(sub: Commands) -> None:
    pu = sub.add_parser("push")
    pu.add_argument("--json", action="store_true")
    _db_option(pu)


def cmd_push(args: argparse.Namespace, ref: str) -> int:
    """Upload the local spool of a shared database (what runs could not store there)."""
    from ..store.postgres import PgStore
    from ..store.spool import push, spool_path
    from ..store.sqlite import Store
    from ..store.url import safe_url

    if not is_url(ref):
        raise UsageError("push uploads the local spool of a shared database: give it with "
                         f"--db postgresql://USER@HOST:PORT/DBNAME (or ${DB_ENV})")
    path = spool_path(ref)
    if not path.exists():
        if args.json:
            _print_json([])
        else:
            _say(f"nothing to push: no spool for {safe_url(ref)} at {path}")
        return EXIT_OK
    spool = Store(path)
    try:
        remote = PgStore(ref)
        try:
            done = push(spool, remote)
            waiting = [r.id for r in spool.runs()]
        finally:
            remote.close()
    finally:
        spool.close()
    if args.json:
        _print_json([p.to_dict() for p in done])
        return EXIT_OK
    for p in done:
        _say(f"pushed run {p.run_id} to {safe_url(ref)}: {p.counted()}")
    if not done:
        _say("nothing to push: the spool holds no finished run")
    if waiting:
        _say(f"still in the spool (their runs are still writing): {', '.join(waiting)}")
    return EXIT_OK
