#!/usr/bin/env python3
"""Interop on the demo tree: py9p reads everything `9agents --demo` serves.

Over 9P2000 and then 9P2000.u, py9p (PyPI package p9fs) reads a demo
transcript and compares it with the file on disk, then crawls the whole
tree: every directory listed (decoded in the session's dialect), every
listed entry walked to from the root and stat'd, every file read whole.
Each file below a mount must be byte for byte the file on disk, its listed
length and qid must be what stat says, the files served must be exactly
the demo's regular files that do not hold the secret marker, and no byte
of the marker may ever come back (demo/README.md, "What must stay
invisible").

Run by tests/mirror_interop.rs, which passes the mount table
(`--mount TREE=REL`, from tests/common) so the map from tree to disk is
written once; by hand:

    python3 tests/interop/py9p_demo_check.py --socket PATH --demo-home demo/home \\
        --mount /claude/projects=.claude/projects ...

Exit status 0 when every check held; 1 with the first broken check on
stderr; 3 when py9p cannot be imported (`pip install p9fs`).
"""

import argparse
import os
import sys

from py9p_check import CheckFailed, check, dial_unix, py9p  # exits 3 without py9p
from py9p_check import list_dir as list_path, read_rest, read_whole as read_path

SECRET = b"DEMO-SECRET-must-never-be-served"
TRANSCRIPT = "/claude/projects/-home-demo-src-9agents/4462ebfc-5f91-4ef0-9cfb-ac6e7687a66e.jsonl"


def disk_path(home, mounts, tree_path):
    """The file on disk a tree path mirrors, or None for the skeleton."""
    for mount, rel in mounts:
        if tree_path == mount:
            return os.path.join(home, rel)
        if tree_path.startswith(mount + "/"):
            return os.path.join(home, rel, tree_path[len(mount) + 1:])
    return None


def expected_files(home, mounts):
    """Every regular, non-symlink file a mount reaches that does not hold
    the marker, by tree path."""
    out = {}

    def walk(disk, tree):
        if os.path.islink(disk):
            return
        if os.path.isdir(disk):
            for name in os.listdir(disk):
                walk(os.path.join(disk, name), tree + "/" + name)
            return
        with open(disk, "rb") as f:
            data = f.read()
        if SECRET not in data:
            out[tree] = data

    for mount, rel in mounts:
        walk(os.path.join(home, rel), mount)
    return out


def crawl(c, path, out):
    """Depth first below `path`: out[tree path] = (listed entry, bytes or None)."""
    for e in list_path(c, path):
        name = e.name.decode() if isinstance(e.name, bytes) else e.name
        child = ("" if path == "/" else path) + "/" + name
        if e.mode & py9p.DMDIR:
            out[child] = (e, None)
            crawl(c, child, out)
        elif name == "wait" and (child.startswith("/active/") or child == "/usage/wait"):
            # A stream whose reads park until what it follows changes: not read.
            out[child] = (e, None)
        else:
            out[child] = (e, read_path(c, child))


def check_dialect(sock, version, home, mounts, expected):
    print(f"py9p over unix on the demo tree, {version.value}:")
    c = dial_unix(sock, version)

    got = read_path(c, TRANSCRIPT)
    with open(disk_path(home, mounts, TRANSCRIPT), "rb") as f:
        want = f.read()
    check(got == want, f"{TRANSCRIPT} is the file on disk byte for byte ({len(got)} of {len(want)} bytes)")

    found = {}
    crawl(c, "/", found)
    leaks = [p for p, (_, data) in found.items() if (data and SECRET in data) or "DEMO-SECRET" in p]
    check(not leaks, f"no served byte holds the secret marker ({len(found)} entries crawled; leaks: {leaks})")

    served = {p: data for p, (e, data) in found.items() if data is not None and disk_path(home, mounts, p)}
    check(sorted(served) == sorted(expected),
          f"the files served are the demo's non-secret files ({len(served)} served, {len(expected)} expected; "
          f"extra {sorted(set(served) - set(expected))}, missing {sorted(set(expected) - set(served))})")
    differ = [p for p in served if served[p] != expected[p]]
    check(not differ, f"every served file is its file on disk byte for byte (differ: {differ})")

    mismatched = []
    for p, (e, data) in found.items():
        if p == "/health":
            # A live tally: the crawl's own reads of chats change it.
            continue
        st = c.stat(p)[0]
        if st.qid.path != e.qid.path or st.length != e.length or st.mode != e.mode:
            mismatched.append(p)
        if data is not None and st.length != len(data):
            mismatched.append(p)
    check(not mismatched, f"stat agrees with the listing and the bytes read for every entry (mismatched: {mismatched})")

    check_search(c)

    if version == py9p.Version.v9P2000u:
        st = c.stat(TRANSCRIPT)[0]
        uid = os.stat(disk_path(home, mounts, TRANSCRIPT)).st_uid
        check(st.uidnum == uid, f"9P2000.u stat of a mirrored file carries its numeric uid {uid} (got {st.uidnum})")
    c._fullclose()


def check_search(c):
    """/search through py9p: a query named by a path element, and the same
    query written to /search/query and read on the same fid; each result
    a message path that holds the term."""
    by_name = read_path(c, "/search/-i python")
    lines = by_name.decode().splitlines()
    check(lines and all("\t" in l and l.startswith("/sessions/") for l in lines),
          f"/search/-i python lists {len(lines)} messages, each a path and its context")
    lacking = [l for l in lines if b"python" not in read_path(c, l.split("\t")[0]).lower()]
    check(not lacking, f"every result is a message that holds the term (lacking: {lacking})")
    c.open("/search/query", py9p.ORDWR)
    c.write(b"-i python")
    written = read_rest(c)
    check(written == by_name, f"the query written to /search/query reads the same {len(written)} bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True, help="the daemon's Unix socket (started with --demo)")
    ap.add_argument("--demo-home", required=True, help="the demo home the daemon serves")
    ap.add_argument("--mount", action="append", default=[], help="TREE=REL: a mount and the path under the home it mirrors")
    args = ap.parse_args()
    mounts = [tuple(m.split("=", 1)) for m in args.mount]
    if not mounts:
        ap.error("at least one --mount TREE=REL")
    expected = expected_files(args.demo_home, mounts)
    try:
        check(len(expected) > 25, f"the demo home has files to serve ({len(expected)})")
        for version in (py9p.Version.v9P2000, py9p.Version.v9P2000u):
            check_dialect(args.socket, version, args.demo_home, mounts, expected)
    except CheckFailed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    print("interop: every demo check held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
