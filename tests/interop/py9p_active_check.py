#!/usr/bin/env python3
"""Interop on /active: py9p lists the agents and reads every field.

Over 9P2000 and then 9P2000.u, py9p (PyPI package p9fs) lists each
`/active/<harness>` named in the expectations and finds the agents the test
started there, reads every expected file and compares it byte for byte,
and for each agent directory lists it, stats every entry by path and reads
it whole: the stat must agree with the listing (qid path and type, length,
mode) and a read must return exactly the length stat gives.

Run by tests/active_interop.rs, which writes the expectations as JSON:

    {"lists": {"/active/claude": ["1234"]},
     "files": {"/active/claude/1234/via": "registry\\n"},
     "dirs":  ["/active/claude/1234"]}

by hand:

    python3 tests/interop/py9p_active_check.py --socket PATH --expect FILE

Exit status 0 when every check held; 1 with the first broken check on
stderr; 3 when py9p cannot be imported (`pip install p9fs`).
"""

import argparse
import json
import sys

from py9p_check import CheckFailed, check, dial_unix, py9p  # exits 3 without py9p
from py9p_check import list_dir as list_path, read_whole as read_path


def name_of(entry):
    return entry.name.decode() if isinstance(entry.name, bytes) else entry.name


def check_dialect(sock, version, expect):
    print(f"py9p over unix on /active, {version.value}:")
    c = dial_unix(sock, version)

    for path, want in sorted(expect["lists"].items()):
        got = [name_of(e) for e in list_path(c, path)]
        missing = [n for n in want if n not in got]
        check(not missing, f"{path} lists {want} (it lists {got})")

    for path, want in sorted(expect["files"].items()):
        got = read_path(c, path)
        want = want.encode()
        check(got == want, f"{path} reads {want[:60]!r} ({len(want)} bytes; got {got[:60]!r}, {len(got)} bytes)")

    for path in expect["dirs"]:
        entries = list_path(c, path)
        check(len(entries) >= 6, f"{path} lists its fields ({sorted(name_of(e) for e in entries)})")
        for e in entries:
            child = path + "/" + name_of(e)
            st = c.stat(child)[0]
            if name_of(e) == "wait":
                # A stream whose reads park until the agent changes.
                check(st.length == 0 and e.length == 0, f"{child}: a wait file's length is 0")
                continue
            data = read_path(c, child)
            same = (st.qid.path, st.qid.type, st.length, st.mode) == (e.qid.path, e.qid.type, e.length, e.mode)
            check(same, f"{child}: stat agrees with the listing")
            if st.mode & 0x80000000:
                continue  # a directory (chat/): its length is 0 by convention
            check(len(data) == st.length, f"{child}: a read returns the {st.length} bytes stat gives (got {len(data)})")
    c._fullclose()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True, help="the daemon's Unix socket")
    ap.add_argument("--expect", required=True, help="the expectations, as JSON")
    args = ap.parse_args()
    with open(args.expect) as f:
        expect = json.load(f)
    try:
        for version in (py9p.Version.v9P2000, py9p.Version.v9P2000u):
            check_dialect(args.socket, version, expect)
    except CheckFailed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    print("interop: every /active check held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
