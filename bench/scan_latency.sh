#!/usr/bin/env bash
# bench/scan_latency.sh: how long a listing of /active takes on a machine of
# N processes (a fixture <proc>, default 4000, none of them agents), and
# what another client's stat round trips see meanwhile (the issue's bar:
# a scan of thousands of processes never stalls others for more than a
# few milliseconds). Builds the release daemon if needed; all in a scratch
# dir, removed at the end.
set -euo pipefail
n=${1:-4000}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${NINEAGENTS_BIN:-$root/target/release/9agents}
[ -x "$bin" ] || (cd "$root" && cargo build --release --bin 9agents)
scratch=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$scratch"' EXIT
mkdir -p "$scratch/proc" "$scratch/run"
chmod 700 "$scratch/run"
for i in $(seq 1000 $((999 + n))); do
    mkdir "$scratch/proc/$i"
    printf 'bash\0-l\0' > "$scratch/proc/$i/cmdline"
    echo "$i (bash) S 1 $i $i 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0" > "$scratch/proc/$i/stat"
done
printf 'btime 1795770000\n' > "$scratch/proc/stat"
XDG_RUNTIME_DIR="$scratch/run" "$bin" --no-post --unix "$scratch/s" --proc "$scratch/proc" 2>/dev/null &
pid=$!
for _ in $(seq 100); do [ -S "$scratch/s" ] && break; sleep 0.05; done
python3 - "$scratch/s" "$bin" "$n" <<'PY'
import socket, struct, subprocess, sys, threading, time
path, bin_, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def rpc(s, t, tag, body):
    msg = struct.pack("<BH", t, tag) + body
    s.sendall(struct.pack("<I", len(msg) + 4) + msg)
    size = struct.unpack("<I", s.recv(4, socket.MSG_WAITALL))[0]
    return s.recv(size - 4, socket.MSG_WAITALL)
s = socket.socket(socket.AF_UNIX)
s.connect(path)
rpc(s, 100, 0xFFFF, struct.pack("<IH", 65536, 6) + b"9P2000")
rpc(s, 104, 1, struct.pack("<IIH", 0, 0xFFFFFFFF, 1) + b"u" + struct.pack("<H", 0))
for run in range(3):
    lat, stop = [], False
    def stats():
        while not stop:
            t0 = time.perf_counter()
            rpc(s, 124, 2, struct.pack("<I", 0))
            lat.append(time.perf_counter() - t0)
    th = threading.Thread(target=stats)
    th.start()
    t0 = time.perf_counter()
    subprocess.run([bin_, "ls", "-a", "unix!" + path, "/active/claude"], check=True, capture_output=True)
    scan = time.perf_counter() - t0
    stop = True
    th.join()
    lat.sort()
    q = lambda f: lat[min(len(lat) - 1, int(len(lat) * f))] * 1000
    print(f"scan_latency: run {run + 1}: listing /active/claude over {n} processes took {scan * 1000:.1f} ms; "
          f"stat during it n {len(lat)} p50 {q(0.5):.3f} ms p99 {q(0.99):.3f} ms max {lat[-1] * 1000:.3f} ms")
PY
