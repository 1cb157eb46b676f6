#!/bin/busybox sh
# /init of the kernel test's guest (tests/kernel.rs): busybox is the whole
# userland. It loads the 9p modules, starts three 9agents daemons on the
# fixture worlds the host generated (/fx/light, /fx/heavy, and /fx/move
# over the real /proc with --allow-move: see tests/kernel/fixture.rs),
# mounts them with the kernel's 9p client in each dialect (9P2000.L, the
# default, with no version option) and prints one line per check,
# "PASS <name> (...)" or "FAIL <name>: <why>", which the host parses; "INFO" and "TIME" lines are for the reader. It
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
between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

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
# /run/NAME.sock, its stderr in /run/NAME.log, its pid in NAME_PID. WORLD
# "move" is the move daemon's: the real /proc, moves allowed with the fake
# zmx, and HOME and XDG_RUNTIME_DIR (its zmx registry is there) of its own.
start_daemon() {
    if [ "$2" = move ]; then
        env -i PATH=/bin RUST_BACKTRACE=1 HOME="$MOVE_HOME" XDG_RUNTIME_DIR="$MOVE_RUNTIME" /bin/9agents \
            --root "claude=$MOVE_HOME/.claude" --proc /proc --allow-move --zmx /fx/move/zmx \
            --no-post --unix "/run/$1.sock" 2>"/run/$1.log" </dev/null &
    else
        env -i PATH=/bin RUST_BACKTRACE=1 /bin/9agents --root "claude=$2/home/.claude" --root "codex=$2/home/.codex" \
            --proc "$2/proc" --no-post --unix "/run/$1.sock" 2>"/run/$1.log" </dev/null &
    fi
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

# opts TAG: the mount options that ask for dialect TAG. 9p2000.L is the
# kernel's default, so it is asked for by giving no version at all.
opts() {
    case "$1" in
        9p2000.L) echo "trans=unix" ;;
        *) echo "trans=unix,version=$1" ;;
    esac
}

# mnt NAME DIR TAG [EXTRA]: mount daemon NAME's socket at DIR in dialect
# TAG, with EXTRA options (cache=...) if given.
mnt() {
    mkdir -p "$2"
    o="$(opts "$3")${4:+,$4}"
    if ! out=$(mount -t 9p -o "$o" "/run/$1.sock" "$2" 2>&1); then
        fail "$3${4:+/$4}/mount-$1" "mount -o $o: $out"
        return 1
    fi
}

# status NAME LABEL: SIGUSR1 to daemon NAME, and its status line printed.
# Its variables are its own (st_*): callers keep theirs.
status() {
    eval "st_pid=\$$1_PID"
    st_before=$(grep -c '9agents status' "/run/$1.log")
    kill -USR1 "$st_pid"
    st_n=0
    while [ "$(grep -c '9agents status' "/run/$1.log")" -le "$st_before" ] && [ $st_n -lt 100 ]; do
        sleep 0.05
        st_n=$((st_n + 1))
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

# refusals: every way of writing is refused with EROFS or EPERM (under
# 9P2000.L, whose errors are errnos, with EROFS), and the file is unchanged
# after.
refusals() {
    t=$1 m=$2 p="$2/claude/projects/p"
    want="EROFS or EPERM"
    [ "$t" = 9p2000.L ] && want="EROFS"
    for op in "write $p/small.txt" "creat $p/new.txt" "rename $p/small.txt $p/renamed.txt" "chmod $p/small.txt" \
        "unlink $p/small.txt" "mkdir $p/newdir" "rmdir $p/emptydir" "truncate $p/small.txt"; do
        # shellcheck disable=SC2086
        got=$(probe refuse $op)
        name="$t/refuse-${op%% *}"
        case "$want:$got" in
            *:EROFS* | "EROFS or EPERM:EPERM"*) pass "$name" "$got" ;;
            *:ok) fail "$name" "it succeeded" ;;
            *) fail "$name" "$got; want $want" ;;
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

# search: a word of the fixture's chat, found through /search/<word> and
# through the write-then-read form of /search/query: at least one result,
# each result's path a message that holds the word, both forms the same.
search() {
    t=$1 m=$2 bad=""
    term=$(cat "$LIGHT"/chat/* | tr -cs 'A-Za-z' '\n' | awk 'length >= 6' | head -n 1)
    t0=$(now)
    if ! cat "$m/search/$term" > /tmp/search.out 2> /tmp/search.err < /dev/null; then
        fail "$t/search" "cat /search/$term: $(head -c 200 /tmp/search.err)"
        return
    fi
    t1=$(now)
    # The same question asked the way a mount alone answers it, for scale:
    # grep through every chat file; the same messages, in any order.
    grep -rlF "$term" "$m"/sessions/*/*/chat "$m"/sessions/*/*/agents/*/chat 2> /dev/null < /dev/null |
        sed "s|^$m||" | sort > /tmp/grep.out
    t2=$(now)
    cut -f1 /tmp/search.out | sort | cmp -s - /tmp/grep.out ||
        bad="$bad; grep -rl through the mount found $(wc -l < /tmp/grep.out) messages, the search $(wc -l < /tmp/search.out)"
    n=$(wc -l < /tmp/search.out)
    [ "$n" -gt 0 ] || bad="$bad; no result for $term"
    while IFS="$TAB" read -r path ctx; do
        grep -qF "$term" "$m$path" 2> /dev/null < /dev/null || bad="$bad; $path does not hold $term"
        case "$ctx" in *"$term"*) ;; *) bad="$bad; $path: the context $ctx lacks $term" ;; esac
    done < /tmp/search.out
    if exec 3<> "$m/search/query"; then
        printf '%s' "$term" >&3 && cat <&3 > /tmp/search2.out 2> /tmp/search2.err
        exec 3<&-
        cmp -s /tmp/search.out /tmp/search2.out ||
            bad="$bad; the write form read $(wc -l < /tmp/search2.out) lines ($(head -c 100 /tmp/search2.err)), not $n"
    else
        bad="$bad; /search/query does not open for reading and writing"
    fi
    if [ -n "$bad" ]; then
        fail "$t/search" "${bad#; }"
    else
        pass "$t/search" "$n messages hold $term, by /search/$term and by a query written to /search/query, and by grep -rl of every chat file; the search $(between "$t0" "$t1") s, grep -rl $(between "$t1" "$t2") s"
    fi
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

# parked NAME N: poll daemon NAME's status line (SIGUSR1) until it counts
# at least N parked wait reads; false after 10 s.
parked() {
    n=0
    while [ $n -lt 100 ]; do
        status "$1" parked > /tmp/parked.status
        w=$(sed -n 's/.* waits=\([0-9]*\).*/\1/p' /tmp/parked.status)
        [ "${w:-0}" -ge "$2" ] && return 0
        sleep 0.1
        n=$((n + 1))
    done
    return 1
}

# append VERSION: a line appended to the transcript on the guest's disk is
# read back through the mirror and as the chat's next message; and
# `head -n 1 wait`, parked in the daemon before the line was written,
# returns with that message's line.
append() {
    t=$1 m=$2 d="$2/active/claude/$AGENT_PID/chat"
    if ! before=$(probe count "$d"); then
        fail "$t/append" "the chat before: $before"
        return
    fi
    name=$(printf '%08d-user' "$before")
    head -n 1 "$2/active/claude/$AGENT_PID/wait" > /tmp/wait.out 2>&1 < /dev/null &
    head_pid=$!
    if ! parked light 1; then
        fail "$t/wait" "head -n 1 wait never parked: $(cat /tmp/parked.status)"
    fi
    start=$(now)
    echo "$(cat "$LIGHT/append-$1")" >> "$TRANSCRIPT"
    n=0
    while kill -0 "$head_pid" 2> /dev/null && [ $n -lt 200 ]; do
        sleep 0.05
        n=$((n + 1))
    done
    if kill -0 "$head_pid" 2> /dev/null; then
        status light "$t/wait"
        kill "$head_pid"
        fail "$t/wait" "head -n 1 wait had not returned 10 s after the append (it printed: $(head -c 100 /tmp/wait.out); parked: $(sed 's/.*9agents status: //' /tmp/parked.status); the daemon: $(grep -v '9agents status' /run/light.log | tail -n 3))"
    elif [ "$(cat /tmp/wait.out)" != "message $name" ]; then
        fail "$t/wait" "head -n 1 wait printed: $(head -c 200 /tmp/wait.out); want: message $name"
    else
        pass "$t/wait" "head -n 1 wait returned $(since "$start") s after the append: message $name"
    fi
    wait "$head_pid" 2> /dev/null
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
    if [ "$after" -ne $((before + 1)) ] || ! cmp -s "$d/$name" "$LIGHT/append-$1.want"; then
        fail "$t/append" "chat had $before messages, now $after; $name reads: $(head -c 80 "$d/$name" 2>&1)"
        return
    fi
    pass "$t/append" "the transcript grew to $size bytes through the mount; $name is the new message"
}

# dialect: the kernel speaks the dialect asked for, as /proc/mounts shows
# it (v9fs prints version=9p2000.u for .u, noextend for 9P2000, and nothing
# for its default, 9P2000.L): a server that answers 9P2000.L's Tversion
# with 9P2000 makes a default mount fall back to 9P2000 without a word.
dialect() {
    t=$1 m=$2
    o=$(awk -v m="$m" '$2 == m && $3 == "9p" { print $4 }' /proc/mounts)
    case "$t" in
        9p2000.L) case ",$o," in *,noextend,* | *,version=*) got=other ;; *) got=$t ;; esac ;;
        9p2000.u) case ",$o," in *,version=9p2000.u,*) got=$t ;; *) got=other ;; esac ;;
        9p2000) case ",$o," in *,noextend,*) got=$t ;; *) got=other ;; esac ;;
    esac
    if [ "$got" = "$t" ]; then pass "$t/dialect" "$o"; else fail "$t/dialect" "asked for $t, the mount says $o"; fi
}

# owners: stat shows the owners' numbers: a mirrored file's is its owner's
# on disk (the light home is chowned to LIGHT_UID:LIGHT_GID), the tree's
# own entries are the daemon's (root here). 9P2000 carries no numbers, so
# there the kernel shows its dfltuid (4294967294) and it is only printed.
owners() {
    t=$1 m=$2 bad=""
    for pair in "claude/projects/p/small.txt $LIGHT_UID $LIGHT_GID" "claude/projects/p $LIGHT_UID $LIGHT_GID" \
        "active/claude/$AGENT_PID/chat/00000000-user 0 0" "README 0 0" ". 0 0"; do
        set -- $pair
        got=$(stat -c '%u %g' "$m/$1" 2>&1)
        [ "$got" = "$2 $3" ] || bad="$bad; $1: $got, want $2 $3"
    done
    if [ "$t" = 9p2000 ]; then
        echo "INFO $t/owners: 9P2000 has no numeric owners:${bad#;}"
    elif [ -n "$bad" ]; then
        fail "$t/owners" "${bad#; }"
    else
        pass "$t/owners" "mirrored files $LIGHT_UID:$LIGHT_GID as on disk, the tree's own entries 0:0 (the daemon's)"
    fi
}

# xattrs (9P2000.L): nothing served has an extended attribute. getfattr -d
# prints nothing and exits 0; getfattr -n user.x fails with ENODATA (its
# "No such attribute").
xattrs() {
    t=$1 m=$2 n=0 bad=""
    for p in claude/projects/p/small.txt claude/projects/p "active/claude/$AGENT_PID/chat/00000000-user" README .; do
        n=$((n + 1))
        out=$(probe getfattr -d "$m/$p")
        rc=$?
        [ $rc -eq 0 ] && [ -z "$out" ] || bad="$bad; getfattr -d $p (exit $rc): $out"
        out=$(probe getfattr -n user.x "$m/$p")
        case "$out" in *ENODATA*) ;; *) bad="$bad; getfattr -n user.x $p: $out" ;; esac
    done
    if [ -n "$bad" ]; then
        fail "$t/getfattr" "${bad#; }"
    else
        pass "$t/getfattr" "$n entries: getfattr -d prints nothing, -n user.x is ENODATA"
    fi
}

# locks (9P2000.L): a shared flock is granted, an exclusive one refused (not
# left hanging: LOCK_NB, and the probe gives up after 10 s); the errno the
# user sees is printed.
locks() {
    t=$1 f="$2/claude/projects/p/small.txt"
    got=$(probe flock sh "$f")
    if [ "$got" = ok ]; then pass "$t/flock-shared" "granted"; else fail "$t/flock-shared" "$got"; fi
    got=$(probe flock ex "$f")
    case "$got" in
        ENOLCK* | EAGAIN* | EWOULDBLOCK* | EROFS* | EPERM* | EACCES*) pass "$t/flock-exclusive" "refused: $got" ;;
        ok) fail "$t/flock-exclusive" "granted on a read-only file system" ;;
        *) fail "$t/flock-exclusive" "$got" ;;
    esac
}

# statfs: stat -f answers, with the 9p file system's magic (V9FS_MAGIC,
# 0x01021997). Under 9P2000.L the kernel asks the server (Tstatfs) and
# shows its answer; the others never ask.
statfs() {
    t=$1 m=$2
    out=$(stat -f -c '%t %b %c %l' "$m" 2>&1)
    rc=$?
    set -- $out
    if [ $rc -eq 0 ] && [ "$1" = 1021997 ]; then
        pass "$t/statfs" "f_type 0x$1 (V9FS_MAGIC), $2 blocks, $3 files, names up to $4 bytes"
    else
        fail "$t/statfs" "stat -f (exit $rc): $out; want f_type 1021997"
    fi
}

# move TAG: a name written into zmx of a live agent through a mount of the
# move daemon (--allow-move, the fake zmx) moves it: the write succeeds, the
# agent is ended, zmx runs with "run NAME -d claude --resume SID" in the
# agent's cwd, and its session's socket is posted. A fresh agent each time.
# Under 9P2000.L it is what a user types, echo NAME > zmx: open with
# O_TRUNC (Tlopen, then Tsetattr of size 0), then the write. Under 9P2000.u
# the kernel makes that O_TRUNC a Twstat of length 0, which the daemon
# refuses like any wstat, so there the probe opens without O_TRUNC (Topen
# OWRITE) and writes: the same fakes, moved the way .u allows.
move() {
    t=$1 name="moved-$(echo "$1" | tr -c 'A-Za-z0-9\n' '-')"
    start_agent || return
    mnt mover /mnt/mover "$t" || return
    d="/mnt/mover/active/claude/$MOVE_PID"
    n=0
    while [ ! -e "$d/zmx" ] && [ $n -lt 100 ]; do
        sleep 0.05
        n=$((n + 1))
    done
    if [ "$t" = 9p2000.L ]; then
        how="echo $name > zmx"
        out=$( (echo "$name" > "$d/zmx") 2>&1) && out=ok
    else
        how="probe put zmx $name"
        out=$(probe put "$d/zmx" "$name")
    fi
    [ "$out" = ok ]
    rc=$?
    umount /mnt/mover
    # The agent is init's child: gone, or a corpse until the shell reaps it.
    n=0
    while alive "$MOVE_PID" && [ $n -lt 100 ]; do
        sleep 0.05
        n=$((n + 1))
    done
    ended=yes
    if alive "$MOVE_PID"; then
        ended=no
        kill -9 "$MOVE_PID"
    fi
    wait "$MOVE_PID" 2> /dev/null
    rec=$(cat "/run/zmx.record.$name" 2> /dev/null)
    want="argv: run $name -d claude --resume $MOVE_SID${NL}cwd: $MOVE_CWD"
    if [ $rc -ne 0 ]; then
        fail "$t/move" "$how: $out; the daemon: $(grep -i move "/run/mover.log" | tail -n 2)"
    elif [ $ended = no ]; then
        fail "$t/move" "the write succeeded but the agent $MOVE_PID was still running 5 s later"
    elif [ "$rec" != "$want" ]; then
        fail "$t/move" "zmx ran as: $rec; want: $want"
    elif [ ! -S "$MOVE_RUNTIME/9p/zmx/$name" ]; then
        fail "$t/move" "no session socket at $MOVE_RUNTIME/9p/zmx/$name"
    else
        pass "$t/move" "$how: the agent ended, zmx ran \"run $name -d claude --resume $MOVE_SID\" in its cwd, the session is posted"
    fi
}

# alive PID: the process runs (it exists and is no corpse).
alive() {
    st=$(cut -d' ' -f3 "/proc/$1/stat" 2> /dev/null)
    [ -n "$st" ] && [ "$st" != Z ]
}

# start_agent: a fake claude (the probe, as "claude") in MOVE_CWD, and the
# registry record that resolves its session, MOVE_SID, with its starttime.
start_agent() {
    (cd "$MOVE_CWD" && exec /fx/move/bin/claude) < /dev/null > /dev/null 2>&1 &
    MOVE_PID=$!
    n=0
    while [ "$(cat "/proc/$MOVE_PID/comm" 2> /dev/null)" != claude ] && [ $n -lt 100 ]; do
        sleep 0.05
        n=$((n + 1))
    done
    start=$(sed 's/.*) //' "/proc/$MOVE_PID/stat" | cut -d' ' -f20)
    printf '{"pid":%s,"sessionId":"%s","cwd":"%s","procStart":"%s","status":"idle"}\n' \
        "$MOVE_PID" "$MOVE_SID" "$MOVE_CWD" "$start" > "$MOVE_HOME/.claude/sessions/$MOVE_PID.json"
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
    case " $HEAVY_CHAT_VERSIONS " in
        *" $t "*) heavy_list "$t/chat-$HEAVY_MESSAGES" "$m/active/claude/$AGENT_PID/chat" "$HEAVY_MESSAGES" ;;
        *) echo "INFO $t/chat-$HEAVY_MESSAGES: not listed under $t (the ls -l of $HEAVY_MESSAGES runs on $HEAVY_CHAT_VERSIONS only)" ;;
    esac
    status heavy "$t/after the heavy listings"
    t0=$(now)
    got=$(probe hold "$HOLD_FILES" "$m/$HEAVY_DIR_TREE" "$HEAVY_DIR")
    echo "TIME $t/hold-$HOLD_FILES: $(since "$t0") s"
    case "$got" in held*) pass "$t/hold-$HOLD_FILES" "$got" ;; *) fail "$t/hold-$HOLD_FILES" "$got" ;; esac
    status heavy "$t/after holding $HOLD_FILES files"
}

# forwarded: README's "A remote machine": the host forwards a daemon's
# socket over ssh (`ssh -L`, kernel/forward.rs) and qemu carries it into
# a virtio serial port; the probe relays the port to a Unix socket (the
# kernel's 9p client cannot write to the port itself), and the kernel
# mounts that socket as README mounts a forward (trans=unix, 9P2000.L):
# the daemon's --demo agents are listed and a file of theirs is read. No
# port (the host had no sshd): said, not checked.
forwarded() {
    t=remote/forward port=""
    for p in /sys/class/virtio-ports/*; do
        [ "$(cat "$p/name" 2> /dev/null)" = org.9agents.forward ] && port="/dev/${p##*/}"
    done
    if [ -z "$port" ]; then
        echo "INFO $t: no forwarded port (the host has no sshd): not checked"
        return
    fi
    mkdir -p /mnt/forward
    t0=$(now)
    if ! out=$(probe relay /run/forward.sock "$port" 2>&1); then
        fail "$t" "relaying $port: $out"
        return
    fi
    if ! out=$(timeout -s KILL 60 mount -t 9p -o trans=unix /run/forward.sock /mnt/forward 2>&1); then
        fail "$t" "mount -t 9p -o trans=unix /run/forward.sock (relayed from $port): $out"
        return
    fi
    agents=$(ls /mnt/forward/active/claude 2>&1 | tr '\n' ' ')
    title=$(cat /mnt/forward/active/claude/48213/title 2>&1)
    t1=$(now)
    umount /mnt/forward
    if [ "$agents" != "48213 48377 " ]; then
        fail "$t" "ls /active/claude through the forward: $agents"
    elif [ -z "$title" ]; then
        fail "$t" "the demo agent's title through the forward is empty"
    else
        pass "$t" "the host's daemon over ssh -L, relayed from $port and mounted trans=unix: /active/claude is $agents, 48213's title \"$title\" ($(between "$t0" "$t1") s)"
    fi
}

# ---------------------------------------------------------------------------
# The run.

light_round() {
    v=$1
    mnt light /mnt/light "$v" || return
    dialect "$v" /mnt/light
    listing "$v" /mnt/light
    hidden "$v" /mnt/light
    cats "$v" /mnt/light
    stats "$v" /mnt/light
    owners "$v" /mnt/light
    chat "$v" /mnt/light
    search "$v" /mnt/light
    refusals "$v" /mnt/light
    statfs "$v" /mnt/light
    if [ "$v" = 9p2000.L ]; then
        xattrs "$v" /mnt/light
        locks "$v" /mnt/light
    fi
    parallel "$v" /mnt/light
    umount /mnt/light
    for cache in loose mmap; do
        mnt light "/mnt/$cache" "$v" "cache=$cache" || continue
        listing "$v/cache=$cache" "/mnt/$cache"
        cats "$v/cache=$cache" "/mnt/$cache"
        umount "/mnt/$cache"
    done
}

heavy_round() {
    v=$1
    mnt heavy /mnt/heavy "$v" || return
    heavy "$v" /mnt/heavy
    umount /mnt/heavy
}

daemons_alive() {
    for d in light heavy mover; do
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

NL='
'
load_modules
# The light home belongs to someone other than the daemon, so a stat that
# shows the daemon's owner for a mirrored file is caught.
chown -R "$LIGHT_UID:$LIGHT_GID" "$LIGHT/home"
start_daemon light "$LIGHT"
start_daemon heavy "$HEAVY"
# The move daemon: the real /proc, moves allowed, the fake zmx; its zmx
# registry is $XDG_RUNTIME_DIR/9p/zmx.
mkdir -p "$MOVE_RUNTIME/9p/zmx"
chmod -R 700 "$MOVE_RUNTIME"
start_daemon mover move
case "$(cat /fx/mode)" in
    shell)
        mnt light /mnt/light 9p2000.L
        mnt heavy /mnt/heavy 9p2000.L
        echo "9agents-guest: /mnt/light and /mnt/heavy are mounted (9P2000.L); the daemons log to /run/*.log;"
        echo "9agents-guest: /fx holds the fixtures, /bin/probe the helper. Exit the shell to power off."
        setsid cttyhack sh
        finish
        ;;
    cmd)
        mnt light /mnt/light 9p2000.L
        mnt heavy /mnt/heavy 9p2000.L
        . /fx/cmd
        echo "9agents-guest: the command exited $?"
        finish
        ;;
esac
# First: the host's forward was connected when qemu started.
forwarded
for v in $VERSIONS; do
    light_round "$v"
    heavy_round "$v"
done
for v in $MOVE_VERSIONS; do
    move "$v"
done
# Last: the appends change the light home, which every check above compares with.
for v in $VERSIONS; do
    mnt light /mnt/light "$v" || continue
    append "$v" /mnt/light
    umount /mnt/light
done
daemons_alive
finish
