#!/usr/bin/env python3
"""Interop: a 9P client nobody here wrote, against the real daemon.

py9p (shipped by the PyPI package p9fs) dials the daemon's Unix socket and,
over 9P2000 and then over 9P2000.u, falls back from Tauth to an attach,
lists `/`, reads `README` and `pid`, stats `README`, and is refused a write.
Every byte read is compared with what the Rust side says the daemon serves
(`--readme FILE` holds the expected README bytes; `--pid` the daemon's pid).
With `--tcp-port`, p9fs's own fsspec filesystem does the same over TCP.

Run by tests/interop.rs; by hand:

    python3 tests/interop/py9p_check.py --socket PATH --pid PID --readme FILE

Exit status 0 when every check held; 1 with the first broken check on
stderr; 3 when py9p cannot be imported (`pip install p9fs`).
"""

import argparse
import os
import socket
import sys

try:
    from py9p import py9p
except ImportError as e:  # the Rust side decides whether that is a skip
    print(f"cannot import py9p ({e}): pip install p9fs", file=sys.stderr)
    sys.exit(3)

READ_ONLY = b"Read-only file system"
FIRST_NAMES = {b"README", b"pid", b"uptime"}
# What py9p asks for and the daemon must grant (its cap is far above).
MSIZE = 65536


class CheckFailed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise CheckFailed(what)
    print(f"  ok: {what}")


def dial_unix(path, version):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    # Client() negotiates, sends Tauth (refused here), attaches with NOFID,
    # and clones the root as its working directory.
    return py9p.Client(s, py9p.Credentials(user="glenda"), ver=version, msize=MSIZE)


def read_whole(client, name):
    client.open(name)
    return read_rest(client)


def read_rest(client):
    """Read the open file from where it stands to an empty read; close it."""
    data = b""
    while True:
        chunk = client.read(client.msize)
        if not chunk:
            break
        data += chunk
    client.close()
    return data


def list_dir(client, path=None):
    """The entries of the directory at `path` (the working directory when
    none). Client.lsdir() decodes every dialect as plain 9P2000 (py9p's own
    bug), so decode here as p9fs does, in the session's dialect."""
    if path is None:
        client.open()
    else:
        client.open(path)
    entries = []
    while True:
        data = client.read(client.msize)
        if not data:
            break
        m = py9p.Marshal9P(dotu=client.dotu)
        m.setBuffer(data)
        m.buf.seek(0)
        m.decstat(entries, 0)
    client.close()
    return entries


def check_dialect(path, version, readme, pid):
    print(f"py9p over unix, {version.value}:")
    c = dial_unix(path, version)
    check(c.msize == MSIZE, f"msize negotiated to {MSIZE} (got {c.msize})")

    entries = list_dir(c)
    names = {e.name for e in entries}
    check(FIRST_NAMES <= names, f"/ lists {sorted(FIRST_NAMES)} (got {sorted(names)})")
    by_name = {e.name: e for e in entries}
    check(by_name[b"README"].length == len(readme), "README's listed length is its text's")
    check(by_name[b"README"].mode == 0o444, "README's listed mode is 0444")
    check(by_name[b"pid"].qid.type & 0xFF == py9p.QTFILE, "pid's qid is a file's")

    got = read_whole(c, "README")
    check(got == readme, f"README reads back byte for byte ({len(got)} of {len(readme)} bytes)")
    got = read_whole(c, "pid")
    check(got == f"{pid}\n".encode(), f"pid reads {pid} (got {got!r})")

    st = c.stat("README")
    check(len(st) == 1 and st[0].name == b"README", "stat README names README")
    check(st[0].mode == 0o444 and st[0].length == len(readme), "stat README: mode 0444, length of its text")
    check(st[0].qid.path == by_name[b"README"].qid.path, "stat's qid path is the listing's")
    if version == py9p.Version.v9P2000u:
        check(st[0].extension == b"", "9P2000.u stat: empty extension")
        check(st[0].uidnum == os.getuid(), f"9P2000.u stat: numeric uid {os.getuid()} (got {st[0].uidnum})")

    try:
        c.open("README", py9p.OWRITE)
        refused = None
    except py9p.RpcError as e:
        refused = e.args[0]
    check(refused == READ_ONLY, f"open for writing is refused with the read-only text (got {refused!r})")

    try:
        c.walk("nosuch")
        missing = None
    except py9p.RpcError as e:
        missing = e.args[0]
    check(missing is not None, f"a missing name is an error ({missing!r})")

    check(read_whole(c, "README") == readme, "the session still serves after the refusals")
    c._fullclose()


def check_p9fs_tcp(port, version, readme, pid):
    from p9fs import P9FileSystem

    print(f"p9fs over tcp, {version}:")
    fs = P9FileSystem(host="127.0.0.1", port=port, username="glenda", version=version, skip_instance_cache=True)
    names = {n.rsplit("/", 1)[-1] for n in fs.ls("", detail=False)}
    check({n.decode() for n in FIRST_NAMES} <= names, f"fs.ls lists README, pid, uptime (got {sorted(names)})")
    check(fs.cat_file("README") == readme, "fs.cat_file('README') is the README byte for byte")
    check(fs.cat_file("pid") == f"{pid}\n".encode(), "fs.cat_file('pid') is the daemon's pid")
    check(fs.info("README")["size"] == len(readme), "fs.info('README') size is its text's length")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True, help="the daemon's Unix socket")
    ap.add_argument("--pid", required=True, type=int, help="the daemon's pid")
    ap.add_argument("--readme", required=True, help="a file holding the README bytes expected")
    ap.add_argument("--tcp-port", type=int, help="also check p9fs over tcp!127.0.0.1!PORT")
    args = ap.parse_args()
    with open(args.readme, "rb") as f:
        readme = f.read()
    try:
        for version in (py9p.Version.v9P2000, py9p.Version.v9P2000u):
            check_dialect(args.socket, version, readme, args.pid)
        if args.tcp_port:
            for version in ("9P2000", "9P2000.u"):
                check_p9fs_tcp(args.tcp_port, version, readme, args.pid)
    except CheckFailed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    print("interop: every check held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
