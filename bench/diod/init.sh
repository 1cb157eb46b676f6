#!/bin/busybox sh
# /init of the diod bench's guest (bench/diod.rs): the kernel test's guest
# (tests/kernel/) with diod beside 9agents. It loads the 9p modules, starts
# 9agents on the fixture home (/fx/home, its agent in /fx/proc) and diod
# exporting a copy of the same tree (/fx/copy), mounts both with the
# kernel's 9p client over unix sockets, and times the same work on each.
# One line per measurement, which the host parses:
#
#   BENCH <work> <server> <ops> <seconds> <cpu ticks> <ok|WRONG: why>   (a line a round)
#   DIODLOAD <server> <what diodload printed>
#
# and INFO lines for the reader. It never exits: it powers the guest off.

/bin/busybox mkdir -p /bin /proc /sys /dev /run /tmp /mnt
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "9agents-guest: init at $(cut -d' ' -f1 /proc/uptime) s"
. /fx/env

finish() {
    echo "9agents-guest: done at $(cut -d' ' -f1 /proc/uptime) s"
    sync
    poweroff -f
    sleep 60
}

die() {
    echo "FAIL $*"
    for s in 9agents diod; do
        grep -v '^$' "/run/$s.log" | tail -n 20 | sed "s/^/INFO $s log: /"
    done
    finish
}

# The guest's monotonic clock to the microsecond (the probe's).
now() { /bin/probe now; }

for m in $(cat /lib/modules/guest/order); do
    out=$(insmod "/lib/modules/guest/$m" 2>&1) || die "insmod $m: $out"
done

# wait_socket PATH WHO: poll for the socket a server listens on.
wait_socket() {
    n=0
    while [ ! -S "$1" ] && [ $n -lt 200 ]; do
        sleep 0.05
        n=$((n + 1))
    done
    [ -S "$1" ] || die "$2 has no socket at $1 after 10 s: $(cat "/run/$2.log")"
}

# The copy diod exports: the same tree, and a directory of one file per
# chat message standing in for the chat (diod has no chats).
mkdir -p /fx/copy/claude/projects
cp -a "/fx/home/.claude/projects/$TREE_NAME" /fx/copy/claude/projects/
env -i PATH=/bin /bin/9agents --root claude=/fx/home/.claude --proc /fx/proc --no-post --unix /run/9agents.sock \
    $TRACE_OPTS 2> /run/9agents.log < /dev/null &
NINEAGENTS_PID=$!
# diod: no authentication (-n), no config file, in the foreground,
# read-only exports. It looks the attaching user up (the kernel's first
# attach names "nobody"), so the guest has an /etc/passwd of root and nobody.
/bin/diod -f -n -c /dev/null -L stderr -o ro -e /fx/copy -e ctl -l /run/diod.sock 2> /run/diod.log < /dev/null &
DIOD_PID=$!
wait_socket /run/9agents.sock 9agents
wait_socket /run/diod.sock diod

mkdir -p /mnt/9agents /mnt/diod
out=$(mount -t 9p -o "trans=unix$NINEAGENTS_OPTS$BOTH_OPTS" /run/9agents.sock /mnt/9agents 2>&1) ||
    die "mount 9agents: $out"
out=$(mount -t 9p -o "trans=unix,aname=/fx/copy$BOTH_OPTS" /run/diod.sock /mnt/diod 2>&1) || die "mount diod: $out"
grep ' 9p ' /proc/mounts | sed 's/^/INFO mount: /'
echo "INFO clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) (available: $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource))"

# The chat each server lists: 9agents' agent's chat/, diod's stand-in.
chat_of() {
    case "$1" in
        9agents) echo "/mnt/9agents/active/claude/$AGENT_PID/chat" ;;
        diod) echo /mnt/diod/chat ;;
    esac
}

# The CPU time the server's threads have used (its kernel workers are
# threads of it too), in ticks of USER_HZ: utime + stime of /proc/PID/stat.
server_ticks() {
    case "$1" in
        9agents) pid=$NINEAGENTS_PID ;;
        diod) pid=$DIOD_PID ;;
    esac
    awk '{ print $14 + $15 }' "/proc/$pid/stat"
}

# timed WORK SERVER OPS CHECK CMD...: run CMD (output to /tmp/out), time
# it and the server's CPU, and print the BENCH line; CHECK is a command
# judging /tmp/out.
timed() {
    work=$1 server=$2 ops=$3 check=$4
    shift 4
    c0=$(server_ticks "$server")
    t0=$(now)
    "$@" > /tmp/out 2> /tmp/err
    rc=$?
    t1=$(now)
    c1=$(server_ticks "$server")
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
    if [ $rc -ne 0 ] || [ -s /tmp/err ]; then
        verdict="WRONG: exit $rc, $(head -c 200 /tmp/err | tr '\n' ' ')"
    else
        verdict=$($check)
    fi
    echo "BENCH $work $server $ops $secs $((c1 - c0)) $verdict"
}

# The work, each with what its output must be.
find_stat() { find "$1/$TREE" -exec stat -c '%s %n' {} +; }
find_stat_ok() { n=$(wc -l < /tmp/out); [ "$n" -eq "$TREE_ENTRIES" ] && echo ok || echo "WRONG: $n entries"; }
ls_lR() { ls -lR "$1/$TREE"; }
ls_lR_ok() {
    n=$(grep -c '^[-d]' /tmp/out)
    [ "$n" -eq $((TREE_ENTRIES - 1)) ] && echo ok || echo "WRONG: $n entries"
}
cat_all() { (cd "$1/$TREE" && xargs cat < /fx/files); }
cat_all_ok() { n=$(wc -c < /tmp/out); [ "$n" -eq "$TREE_BYTES" ] && echo ok || echo "WRONG: $n bytes"; }
ls_l_chat() { ls -l "$(chat_of "$1")"; }
ls_l_chat_ok() { n=$(grep -c '^-' /tmp/out); [ "$n" -eq "$CHAT_MESSAGES" ] && echo ok || echo "WRONG: $n entries"; }

# --sched-trace: where one vCPU's time goes for one directory's `ls -lR`
# and `cat` of its files, each server in turn: the scheduler's switches
# (tracefs' sched_switch), and per kind of thread (the work's own
# process, the 9p client's kworkers, the server's threads, the ring's
# kernel workers, idle) how often it was switched to, how long it ran and
# how often it was preempted; and the trace buffer's overrun count (0, or
# events were lost).
#
#   SCHED <server> <work> <thread> <switches to it> <microseconds run> <times preempted>
sched_summary() {
    awk -v tag="$1 $2" '
        function kind(c) {
            if (c ~ /^kworker/) return "kworker"
            if (c ~ /^iou-wrk/) return "iou-wrk"
            if (c ~ /^swapper/) return "idle"
            return c
        }
        / sched_switch: / {
            ts = ""
            for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = substr($i, 1, length($i) - 1); break }
            if (ts == "") next
            match($0, /prev_comm=[^ ]+/); prev = kind(substr($0, RSTART + 10, RLENGTH - 10))
            if ($0 ~ /prev_state=R/) pre[prev]++
            match($0, /next_comm=[^ ]+/); next_ = kind(substr($0, RSTART + 10, RLENGTH - 10))
            if (last != "") run[prev] += ts - last
            if (first == "") first = ts
            last = ts; sw[next_]++; n++
        }
        END {
            for (k in sw) printf "SCHED %s %s %d %.0f %d\n", tag, k, sw[k], run[k] * 1e6, pre[k]
            printf "SCHED %s all %d %.0f\n", tag, n, (last - first) * 1e6
        }'
}
sched_trace() {
    t=/sys/kernel/tracing
    mount -t tracefs tracefs "$t" 2> /dev/null
    [ -w "$t/set_event" ] || die "no tracefs at $t"
    echo 16384 > "$t/buffer_size_kb"
    echo sched:sched_switch > "$t/set_event"
    ls "/mnt/9agents/$TREE/d00" | sed 's|^|d00/|' > /tmp/d00
    for s in 9agents diod; do
        ls -lR "/mnt/$s/$TREE/d00" > /dev/null 2>&1
    done
    for s in 9agents diod; do
        for w in ls-lR cat; do
            echo 0 > "$t/tracing_on"
            echo > "$t/trace"
            echo 1 > "$t/tracing_on"
            case $w in
                ls-lR) ls -lR "/mnt/$s/$TREE/d00" > /dev/null ;;
                cat) (cd "/mnt/$s/$TREE" && xargs cat < /tmp/d00 > /dev/null) ;;
            esac
            echo 0 > "$t/tracing_on"
            grep overrun "$t/per_cpu/cpu0/stats" | sed "s/^/INFO trace $s $w: /"
            sched_summary "$s" "$w" < "$t/trace"
        done
    done
    finish
}
[ -n "$SCHED_TRACE" ] && sched_trace

# Warm both: the kernel's caches of the tree's dentries, and 9agents'
# index of the chat (its first listing reads the transcript).
for s in 9agents diod; do
    ls -lR "/mnt/$s/$TREE" > /dev/null 2>&1
    /bin/probe count "$(chat_of $s)" | sed "s/^/INFO $s chat entries: /"
done
# --trace-sample: what the kernel sends 9agents for one directory's
# `ls -lR` and `find -exec stat`, each message kind counted and the first
# lines shown, instead of the timed rows.
trace_sample() {
    for cmd in "ls -lR /mnt/9agents/$TREE/d00" "find /mnt/9agents/$TREE/d00 -exec stat -c %s_%n {} +"; do
        before=$(wc -l < /run/9agents.log)
        $cmd > /dev/null 2>&1
        tail -n +$((before + 1)) /run/9agents.log | grep '^<-' > /tmp/trace
        echo "INFO trace: $cmd: $(wc -l < /tmp/trace) requests"
        awk '{ print $2 }' /tmp/trace | sort | uniq -c | sed 's/^/INFO trace:   /'
        head -n "$TRACE_LINES" /tmp/trace | sed 's/^/INFO trace: /'
    done
    finish
}
[ -n "$TRACE_OPTS" ] && trace_sample

# The tree's rows ROUNDS times, the servers taking turns, so noise from the
# host falls on both alike (the host keeps each one's best round); the
# chat's, which takes minutes, once.
for r in $(seq "$ROUNDS"); do
    for s in 9agents diod; do timed find-stat "$s" "$TREE_ENTRIES" find_stat_ok find_stat "/mnt/$s"; done
    for s in 9agents diod; do timed ls-lR "$s" $((TREE_ENTRIES - 1)) ls_lR_ok ls_lR "/mnt/$s"; done
    for s in 9agents diod; do timed cat "$s" "$TREE_FILES" cat_all_ok cat_all "/mnt/$s"; done
done
for s in 9agents diod; do timed ls-l-chat "$s" "$CHAT_MESSAGES" ls_l_chat_ok ls_l_chat "$s"; done
# diodload -g: DIODLOAD_THREADS threads, each attaching the aname "ctl" and
# sending Tgetattr of "null" for DIODLOAD_SECS seconds.
for s in 9agents diod; do
    out=$(/bin/diodload -s "/run/$s.sock" -g -n "$DIODLOAD_THREADS" -r "$DIODLOAD_SECS" 2>&1 | tr '\n' ' ')
    echo "DIODLOAD $s $out"
done

for pair in "9agents $NINEAGENTS_PID" "diod $DIOD_PID"; do
    set -- $pair
    s=$1 pid=$2
    kill -0 "$pid" 2> /dev/null || echo "FAIL $s exited: $(tail -n 5 "/run/$s.log")"
    grep -v '^$' "/run/$s.log" | head -n 10 | sed "s/^/INFO $s log: /"
done
finish
