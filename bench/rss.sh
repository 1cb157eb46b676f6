#!/usr/bin/env bash
# bench/rss.sh: the idle daemon's resident memory, against the 4 MB target.
#
# Starts the release daemon (building it first if it is missing) in a
# scratch XDG_RUNTIME_DIR with `--no-post --unix <scratch>/rss.sock`, waits
# for the socket, reads VmRSS and VmHWM from /proc/<pid>/status while it is
# idle, connects once (`9agents ls -a unix!<sock> /`) and reads them again,
# then stops it with SIGTERM and checks it exited 0.
#
# Exit status: 0 when the daemon behaved and idle RSS is within 4096 KiB;
# 1 when idle RSS is over the target or the daemon failed (did not listen,
# the ls failed, or it did not exit 0 on SIGTERM).
#
# Environment: NINEAGENTS_BIN overrides the binary; CARGO_TARGET_DIR is
# honoured when looking for target/release/9agents.
set -euo pipefail

TARGET_KIB=4096
DEADLINE_SECS=10

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target_dir=${CARGO_TARGET_DIR:-$root/target}
case $target_dir in /*) ;; *) target_dir=$root/$target_dir ;; esac
bin=${NINEAGENTS_BIN:-$target_dir/release/9agents}

if [[ ! -x $bin ]]; then
    echo "rss: $bin is missing; running cargo build --release" >&2
    (cd "$root" && cargo build --release --bin 9agents)
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/9agents-rss.XXXXXX")
chmod 700 "$scratch"
sock=$scratch/rss.sock
pid=

cleanup() {
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$scratch"
}
trap cleanup EXIT

fail() {
    echo "rss: $*" >&2
    if [[ -s $scratch/daemon.log ]]; then
        echo "rss: daemon log:" >&2
        tail -n 5 "$scratch/daemon.log" >&2
    fi
    exit 1
}

XDG_RUNTIME_DIR=$scratch "$bin" --no-post --unix "$sock" </dev/null >/dev/null 2>"$scratch/daemon.log" &
pid=$!

# The socket appears at bind (std's bind also listens); then wait for the
# process to be asleep in its loop, so "idle" means idle.
deadline=$((SECONDS + DEADLINE_SECS))
until [[ -S $sock ]] && [[ $(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null) == S ]]; do
    kill -0 "$pid" 2>/dev/null || fail "the daemon exited before listening"
    ((SECONDS < deadline)) || fail "no socket at $sock after ${DEADLINE_SECS}s"
    sleep 0.05
done
# A moment more for anything the loop does once at start.
sleep 0.2

# VmRSS and VmHWM of the daemon, in KiB, as "rss hwm".
mem() {
    awk '/^VmRSS:/ {r = $2} /^VmHWM:/ {h = $2} END {print r, h}' "/proc/$pid/status"
}

read -r idle_rss idle_hwm < <(mem)
[[ -n ${idle_hwm:-} ]] || fail "could not read /proc/$pid/status"

"$bin" ls -a "unix!$sock" / >/dev/null || fail "9agents ls -a unix!$sock / failed"
sleep 0.2
read -r after_rss after_hwm < <(mem)
[[ -n ${after_hwm:-} ]] || fail "could not read /proc/$pid/status after connecting"

kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=

echo "rss: $bin (idle, then after one 'ls /' connection)"
printf '  %-28s %10s %10s\n' "state" "VmRSS KiB" "VmHWM KiB"
printf '  %-28s %10s %10s\n' "idle" "$idle_rss" "$idle_hwm"
printf '  %-28s %10s %10s\n' "after one connection" "$after_rss" "$after_hwm"

status=0
if ((idle_rss <= TARGET_KIB)); then
    echo "rss: idle RSS $idle_rss KiB is within the 4 MB target ($TARGET_KIB KiB)"
else
    echo "rss: idle RSS $idle_rss KiB is OVER the 4 MB target ($TARGET_KIB KiB)"
    status=1
fi
if ((rc == 0)); then
    echo "rss: the daemon exited 0 on SIGTERM"
else
    echo "rss: the daemon exited $rc on SIGTERM (expected 0)" >&2
    status=1
fi
exit $status
