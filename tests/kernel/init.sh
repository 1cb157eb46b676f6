#!/bin/busybox sh
# /init of the kernel test's guest (tests/kernel.rs): busybox is the whole
# userland. It loads the 9p modules, starts two 9agents daemons on the
# fixture worlds the host generated (/fx/light, /fx/heavy: see
# tests/kernel/fixture.rs), mounts them with the kernel's 9p client and
# prints one line per check, "PASS <name> (...)" or "FAIL <name>: <why>",
# which the host parses; "INFO" and "TIME" lines are for the reader. It
# never exits: it powers the guest off (the host's qemu runs -no-reboot).
#
# Listings are checked with /bin/probe (tests/kernel/probe.c), never with
# busybox ls or find alone: they print nothing when getdents64 fails.
#
# /fx/mode says what to do: "checks" (the test), "shell" (a shell on the
# console after setting up, NINEAGENTS_GUEST_SHELL=1) or "cmd" (run /fx/cmd
# after setting up, NINEAGENTS_GUEST_CMD).

/bin/busybox mkdir -p /bin /proc /sys /dev /run /tmp /mnt
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "9agents-guest: init at $(cut -d' ' -f1 /proc/uptime) s"
. /fx/env
TAB=$(printf '\t')
CHECKS=0
FAILS=0

finish() {
    echo "9agents-guest: done, $CHECKS checks, $FAILS failed, at $(cut -d' ' -f1 /proc/uptime) s"
    sync
    poweroff -f
    sleep 60
}

pass() {
    CHECKS=$((CHECKS + 1))
    echo "PASS $1${2:+ ($2)}"
}

fail() {
    CHECKS=$((CHECKS + 1))
    FAILS=$((FAILS + 1))
    printf 'FAIL %s: %s\n' "$1" "$(printf '%s' "$2" | tr '\n' ' ')"
}

now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# ---------------------------------------------------------------------------
# Setting up.

load_modules() {
    for m in $(cat /lib/modules/guest/order); do
        if ! out=$(insmod "/lib/modules/guest/$m" 2>&1); then
            fail modules "insmod $m: $out"
            finish
        fi
    done
    grep -q '9p$' /proc/filesystems || { fail modules "no 9p in /proc/filesystems"; finish; }
    pass modules "$(tr '\n' ' ' < /lib/modules/guest/order)"
}

# start_daemon NAME WORLD: a daemon serving WORLD's home and fake proc on
# /run/NAME.sock, its stderr in /run/NAME.log, its pid in NAME_PID.
start_daemon() {
    env -i PATH=/bin RUST_BACKTRACE=1 /bin/9agents --root "claude=$2/home/.claude" --root "codex=$2/home/.codex" \
        --proc "$2/proc" --no-post --unix "/run/$1.sock" 2>"/run/$1.log" </dev/null &
    eval "$1_PID=$!"
    n=0
    while [ ! -S "/run/$1.sock" ] && [ $n -lt 200 ]; do
        sleep 0.05
        n=$((n + 1))
    done
    if [ -S "/run/$1.sock" ]; then
        pass "daemon-$1" "listening after $((n * 50)) ms"
    else
        fail "daemon-$1" "no socket after 10 s: $(cat "/run/$1.log")"
        finish
    fi
}

# mnt NAME DIR OPTIONS: mount daemon NAME's socket at DIR.
mnt() {
    mkdir -p "$2"
    if ! out=$(mount -t 9p -o "trans=unix,$3" "/run/$1.sock" "$2" 2>&1); then
        fail "mount-$1-$3" "$out"
        return 1
    fi
}

# status NAME LABEL: SIGUSR1 to daemon NAME, and its status line printed.
status() {
    eval "pid=\$$1_PID"
    before=$(grep -c '9agents status' "/run/$1.log")
    kill -USR1 "$pid"
    n=0
    while [ "$(grep -c '9agents status' "/run/$1.log")" -le "$before" ] && [ $n -lt 100 ]; do
        sleep 0.05
        n=$((n + 1))
    done
    echo "INFO $2: $(grep '9agents status' "/run/$1.log" | tail -n 1)"
}

# ---------------------------------------------------------------------------
# The light world's checks. Each takes a tag (the dialect, maybe a cache
# mode) and the mount point.

# listing: getdents64 (probe tree), find and ls -lR all see the same
# entries, and below the mirrors' roots exactly the fixture's.
listing() {
    t=$1 m=$2
    if ! probe tree "$m" > /tmp/tree.raw; then
        fail "$t/listing" "$(grep '^ERROR' /tmp/tree.raw | head -n 3)"
        return
    fi
    cut -c3- /tmp/tree.raw | LC_ALL=C sort > /tmp/tree.paths
    total=$(wc -l < /tmp/tree.paths)
    awk 'NR == FNR { root[$0] = 1; next }
         { p = substr($0, 3); for (r in root) if (p == r || index(p, r "/") == 1) { print; next } }' \
        "$LIGHT/mounts" /tmp/tree.raw | LC_ALL=C sort > /tmp/tree.mirror
    LC_ALL=C sort "$LIGHT/paths" > /tmp/want.mirror
    if ! diff /tmp/want.mirror /tmp/tree.mirror > /tmp/tree.diff; then
        fail "$t/listing" "the mirrors list other entries than the fixture's: $(grep '^[-+][^-+]' /tmp/tree.diff | head -n 8)"
        return
    fi
    find "$m" > /tmp/find.raw 2> /tmp/find.err
    rc=$?
    sed -e "1d" -e "s|^$m/||" /tmp/find.raw | LC_ALL=C sort > /tmp/find.paths
    if [ $rc -ne 0 ] || [ -s /tmp/find.err ] || ! cmp -s /tmp/find.paths /tmp/tree.paths; then
        fail "$t/listing" "find (exit $rc, $(head -c 200 /tmp/find.err)) lists $(wc -l < /tmp/find.paths) entries, getdents64 $total"
        return
    fi
    ls -lR "$m" > /tmp/lsR.out 2> /tmp/lsR.err
    rc=$?
    lsn=$(grep -c '^[-dlcbps][-r]' /tmp/lsR.out)
    if [ $rc -ne 0 ] || [ -s /tmp/lsR.err ] || [ "$lsn" -ne "$total" ]; then
        fail "$t/listing" "ls -lR (exit $rc, $(head -c 200 /tmp/lsR.err)) lists $lsn entries, getdents64 $total"
        return
    fi
    pass "$t/listing" "getdents64, find and ls -lR agree on $total entries; the mirrors' $(wc -l < /tmp/want.mirror) are the fixture's"
}

# cats: every fixture file read whole with cat equals its bytes.
cats() {
    t=$1 m=$2 n=0 bad=""
    while IFS="$TAB" read -r typ size mtime tree disk; do
        [ "$typ" = f ] || continue
        n=$((n + 1))
        if ! cat "$m/$tree" > /tmp/cat.out 2> /tmp/cat.err < /dev/null; then
            bad="$bad; $tree: $(cat /tmp/cat.err)"
        elif ! cmp -s /tmp/cat.out "$disk"; then
            bad="$bad; $tree: $(wc -c < /tmp/cat.out) bytes, not the fixture's $size"
        fi
    done < "$LIGHT/manifest"
    if [ -n "$bad" ]; then fail "$t/cat" "${bad#; }"; else pass "$t/cat" "$n files equal to the fixture's bytes"; fi
}

# stats: every fixture entry's size and mtime, as stat(1) sees them.
stats() {
    t=$1 m=$2 n=0 bad=""
    while IFS="$TAB" read -r typ size mtime tree disk; do
        n=$((n + 1))
        got=$(stat -c '%s %Y' "$m/$tree" 2>&1 < /dev/null)
        [ "$got" = "$size $mtime" ] || bad="$bad; $tree: $got, want $size $mtime"
    done < "$LIGHT/manifest"
    if [ -n "$bad" ]; then fail "$t/stat" "${bad#; }"; else pass "$t/stat" "$n sizes and mtimes equal the fixture's"; fi
}

# hidden: the credential-shaped names are in no listing, not found by
# path, and no served byte of the mirrors holds the secret. Uses the
# listing's /tmp/tree.paths. Each one's directory must be listed, or its
# absence would prove nothing.
hidden() {
    t=$1 m=$2 n=0 bad=""
    while read -r p; do
        n=$((n + 1))
        grep -qxF "$p" /tmp/tree.paths && bad="$bad; $p is listed"
        grep -qxF "${p%/*}" /tmp/tree.paths || bad="$bad; ${p%/*}, where $p would be, is not listed"
        got=$(probe stat "$m/$p" < /dev/null)
        case "$got" in ENOENT*) ;; *) bad="$bad; stat $p: $got" ;; esac
    done < "$LIGHT/hidden"
    leaks=$(grep -rlF "$SECRET" "$m/claude" "$m/codex" "$m/skills" 2>&1)
    [ -n "$leaks" ] && bad="$bad; the secret is served in: $leaks"
    if [ -n "$bad" ]; then
        fail "$t/credentials" "${bad#; }"
    else
        pass "$t/credentials" "$n credential-shaped names unlisted and ENOENT by path, no served byte holds the secret"
    fi
}

# refusals: every way of writing is refused with EROFS or EPERM, and the
# file is unchanged after.
refusals() {
    t=$1 m=$2 p="$2/claude/projects/p"
    for op in "write $p/small.txt" "creat $p/new.txt" "rename $p/small.txt $p/renamed.txt" "chmod $p/small.txt" \
        "unlink $p/small.txt" "mkdir $p/newdir" "rmdir $p/emptydir" "truncate $p/small.txt"; do
        # shellcheck disable=SC2086
        got=$(probe refuse $op)
        name="$t/refuse-${op%% *}"
        case "$got" in
            EROFS* | EPERM*) pass "$name" "$got" ;;
            ok) fail "$name" "it succeeded" ;;
            *) fail "$name" "$got; want EROFS or EPERM" ;;
        esac
    done
    if cmp -s "$p/small.txt" "$LIGHT/home/.claude/projects/p/small.txt"; then
        pass "$t/unchanged" "small.txt reads as before the attempts"
    else
        fail "$t/unchanged" "small.txt changed: $(head -c 100 "$p/small.txt" 2>&1)"
    fi
}

# chat: the agent's chat/ lists the fixture's messages, each as it must read.
chat() {
    t=$1 d="$2/active/claude/$AGENT_PID/chat" bad=""
    if ! probe tree "$d" > /tmp/chat.raw; then
        fail "$t/chat" "$(grep '^ERROR' /tmp/chat.raw | head -n 3)"
        return
    fi
    cut -c3- /tmp/chat.raw | LC_ALL=C sort > /tmp/chat.names
    if ! cmp -s /tmp/chat.names "$LIGHT/chat.names"; then
        fail "$t/chat" "lists $(tr '\n' ' ' < /tmp/chat.names), want $(tr '\n' ' ' < "$LIGHT/chat.names")"
        return
    fi
    while read -r name; do
        cat "$d/$name" > /tmp/msg.out 2>&1 < /dev/null
        cmp -s /tmp/msg.out "$LIGHT/chat/$name" || bad="$bad; $name: $(head -c 80 /tmp/msg.out)"
    done < "$LIGHT/chat.names"
    if [ -n "$bad" ]; then fail "$t/chat" "${bad#; }"; else pass "$t/chat" "$(wc -l < /tmp/chat.names) messages, each as it must read"; fi
}

# parallel: 16 readers at once, of mirror files and chat messages.
parallel() {
    t=$1 m=$2 i=0 pids="" bad=""
    while IFS="$TAB" read -r tree want; do
        i=$((i + 1))
        cat "$m/$tree" > "/tmp/par.$i" 2>&1 < /dev/null &
        pids="$pids $!"
    done < "$LIGHT/parallel"
    # shellcheck disable=SC2086
    wait $pids
    i=0
    while IFS="$TAB" read -r tree want; do
        i=$((i + 1))
        cmp -s "/tmp/par.$i" "$want" || bad="$bad; reader $i of $tree: $(head -c 80 "/tmp/par.$i")"
    done < "$LIGHT/parallel"
    if [ -n "$bad" ]; then fail "$t/parallel" "${bad#; }"; else pass "$t/parallel" "$i readers at once, all equal"; fi
}

# append VERSION: a line appended to the transcript on the guest's disk is
# read back through the mirror and as the chat's next message.
append() {
    t=$1 m=$2 d="$2/active/claude/$AGENT_PID/chat"
    if ! before=$(probe count "$d"); then
        fail "$t/append" "the chat before: $before"
        return
    fi
    echo "$(cat "$LIGHT/append-$1")" >> "$TRANSCRIPT"
    size=$(stat -c %s "$TRANSCRIPT")
    got=$(stat -c %s "$m/$TRANSCRIPT_TREE")
    if [ "$got" != "$size" ] || ! cmp -s "$m/$TRANSCRIPT_TREE" "$TRANSCRIPT"; then
        fail "$t/append" "the mirrored transcript is $got bytes, the file $size"
        return
    fi
    if ! after=$(probe count "$d"); then
        fail "$t/append" "the chat after: $after"
        return
    fi
    name=$(printf '%08d-user' "$before")
    if [ "$after" -ne $((before + 1)) ] || ! cmp -s "$d/$name" "$LIGHT/append-$1.want"; then
        fail "$t/append" "chat had $before messages, now $after; $name reads: $(head -c 80 "$d/$name" 2>&1)"
        return
    fi
    pass "$t/append" "the transcript grew to $size bytes through the mount; $name is the new message"
}

# ---------------------------------------------------------------------------
# The heavy world's checks.

# heavy_list TAG DIR WANT: getdents64 counts WANT entries of DIR and ls -l
# lists them all; both timed.
heavy_list() {
    t0=$(now)
    n=$(probe count "$2")
    t1=$(now)
    ls -l "$2" > /tmp/heavy.ls 2> /tmp/heavy.err
    rc=$?
    lines=$(grep -c '^[-d]' /tmp/heavy.ls)
    echo "TIME $1: getdents64 $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s, ls -l $(since "$t1") s"
    if [ "$n" = "$3" ] && [ "$lines" = "$3" ]; then
        pass "$1" "getdents64 and ls -l list all $3"
    else
        fail "$1" "getdents64: $n; ls -l listed $lines of $3 (exit $rc$(head -c 200 /tmp/heavy.err | tr '\n' ' ' | sed 's/^./, &/'))"
    fi
}

heavy() {
    t=$1 m=$2
    heavy_list "$t/dir-$HEAVY_FILES" "$m/$HEAVY_DIR_TREE" "$HEAVY_FILES"
    heavy_list "$t/chat-$HEAVY_MESSAGES" "$m/active/claude/$AGENT_PID/chat" "$HEAVY_MESSAGES"
    status heavy "$t/after the heavy listings"
    t0=$(now)
    got=$(probe hold "$HOLD_FILES" "$m/$HEAVY_DIR_TREE" "$HEAVY_DIR")
    echo "TIME $t/hold-$HOLD_FILES: $(since "$t0") s"
    case "$got" in held*) pass "$t/hold-$HOLD_FILES" "$got" ;; *) fail "$t/hold-$HOLD_FILES" "$got" ;; esac
    status heavy "$t/after holding $HOLD_FILES files"
}

# ---------------------------------------------------------------------------
# The run.

light_round() {
    v=$1
    mnt light /mnt/light "version=$v" || return
    listing "$v" /mnt/light
    hidden "$v" /mnt/light
    cats "$v" /mnt/light
    stats "$v" /mnt/light
    chat "$v" /mnt/light
    refusals "$v" /mnt/light
    parallel "$v" /mnt/light
    umount /mnt/light
    for cache in loose mmap; do
        mnt light "/mnt/$cache" "version=$v,cache=$cache" || continue
        listing "$v/cache=$cache" "/mnt/$cache"
        cats "$v/cache=$cache" "/mnt/$cache"
        umount "/mnt/$cache"
    done
}

heavy_round() {
    v=$1
    mnt heavy /mnt/heavy "version=$v" || return
    heavy "$v" /mnt/heavy
    umount /mnt/heavy
}

daemons_alive() {
    for d in light heavy; do
        eval "pid=\$${d}_PID"
        if ! kill -0 "$pid" 2> /dev/null; then
            fail "daemon-$d-alive" "exited: $(tail -n 5 "/run/$d.log")"
        elif grep -q panicked "/run/$d.log"; then
            fail "daemon-$d-alive" "$(grep -A 3 panicked "/run/$d.log")"
        else
            pass "daemon-$d-alive"
        fi
        grep -v '9agents status' "/run/$d.log" | head -n 20 | sed "s/^/INFO $d daemon: /"
    done
}

load_modules
start_daemon light "$LIGHT"
start_daemon heavy "$HEAVY"
case "$(cat /fx/mode)" in
    shell)
        mnt light /mnt/light version=9p2000.u
        mnt heavy /mnt/heavy version=9p2000.u
        echo "9agents-guest: /mnt/light and /mnt/heavy are mounted (9p2000.u); the daemons log to /run/*.log;"
        echo "9agents-guest: /fx holds the fixtures, /bin/probe the helper. Exit the shell to power off."
        setsid cttyhack sh
        finish
        ;;
    cmd)
        mnt light /mnt/light version=9p2000.u
        mnt heavy /mnt/heavy version=9p2000.u
        . /fx/cmd
        echo "9agents-guest: the command exited $?"
        finish
        ;;
esac
for v in $VERSIONS; do
    light_round "$v"
    heavy_round "$v"
done
# Last: the appends change the light home, which every check above compares with.
for v in $VERSIONS; do
    mnt light /mnt/light "version=$v" || continue
    append "$v" /mnt/light
    umount /mnt/light
done
daemons_alive
finish
