//! `cargo bench --bench diod`: 9agents against diod, both mounted by the
//! Linux kernel's 9p client in the same throwaway qemu guest, on the same
//! work. SPEC.md §5's comparison: ops/s of each and the ratio
//! 9agents/diod, in one run, one table. Target: at least 1.0× on every
//! line — a single-threaded daemon against diod's 16 worker threads (on the
//! guest's one vCPU).
//!
//! The guest is the kernel test's (tests/kernel/: Debian's kernel and 9p
//! modules, busybox, the newc writer and the qemu runner, included here
//! with `#[path]`), with Debian's `diod` and `diodload` and the shared
//! libraries `ldd` names for them added to its initramfs. Inside it,
//! 9agents serves a fixture home (`--root claude=`, a fake `--proc` with
//! one claude agent) and diod exports a copy of the same tree
//! (`diod -n -N -e /fx/copy`, no authentication, no user database), each
//! on a unix socket, each mounted with the kernel's defaults (9P2000.L,
//! `trans=unix`; `aname=/fx/copy` for diod). The work, timed in the guest
//! (bench/diod/init.sh), each once per server after one untimed warm-up
//! listing of both:
//!
//! | row | ops |
//! |---|---|
//! | `find -exec stat` of the tree | entries |
//! | `ls -lR` of the tree | entries |
//! | `cat` of every file of the tree (`xargs cat`) | files |
//! | `ls -l` of the agent's 40,000-message chat; for diod, of a directory of 40,000 small files, one per message (diod serves no chats) | entries |
//! | `diodload -g`: threads attaching the aname `ctl` and sending Tgetattr of `null` | getattrs |
//!
//! Each row's output is checked (the entry count, the bytes read), and a
//! row whose work came out wrong says so instead of a rate. Each row also
//! gives each server's CPU time per op (all its threads, from its
//! `/proc/PID/stat` in the guest), and each round's ratio below the table. `diodload`
//! cannot be pointed at another aname, and 9agents serves only the empty
//! one, so its 9agents row is what `diodload` printed. See
//! bench/README.md.
//!
//! Options: `--version 9p2000.u` mounts 9agents with that dialect instead
//! of the default (.L); `--diodload-secs N` (5), `--diodload-threads N`
//! (16); `--bin PATH` puts another 9agents binary in the guest;
//! `--trace-sample N` times nothing and prints what the kernel sends 9agents
//! for `ls -lR` and `find -exec stat` of one directory (each message kind
//! counted, the first N messages), which is what `bench/ops.rs` replays;
//! `--sched-trace` times nothing and prints, for one directory's `ls -lR`
//! and `cat` of its files on each server, how often each kind of thread
//! ran, for how long, and how often it was preempted (tracefs'
//! sched_switch). With `NINEAGENTS_GUEST_ICOUNT=0` in the environment the
//! guest's clock counts instructions (`-icount`): the rows no longer move
//! with the host's load (docs/KERNEL.md).

#[path = "../tests/active_fakes/mod.rs"]
mod active_fakes;
#[path = "../tests/chat_fakes/mod.rs"]
mod chat_fakes;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/kernel/cpio.rs"]
mod cpio;
#[allow(dead_code)]
#[path = "../tests/kernel/fixture.rs"]
mod fixture;
#[allow(dead_code)]
#[path = "../tests/kernel/guest.rs"]
mod guest;
#[allow(dead_code)]
#[path = "../tests/kernel/kit.rs"]
mod kit;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use active_fakes::claude_project_dir;
use chat_fakes::claude_user;
use fixture::AGENT_PID;
use guest::{Mode, Stage};

/// The tree every row but the chat's works on: `TREE_DIRS` directories of
/// `TREE_FILES_PER_DIR` files, under the home's `.claude/projects/`.
const TREE_NAME: &str = "tree";
const TREE_DIRS: usize = 20;
const TREE_FILES_PER_DIR: usize = 50;
/// The files' sizes, in turn: empty, small, a page, a few pages, and one
/// more than the tools' usual 64 KiB msize.
const FILE_SIZES: [usize; 6] = [0, 100, 1_000, 4_096, 10_000, 65_537];
/// The chat's messages: a long real session's, as the kernel test's.
const CHAT_MESSAGES: u64 = 40_000;
/// Where diod is; Debian's package puts both in /usr/sbin.
const DIOD: &str = "/usr/sbin/diod";
const DIODLOAD: &str = "/usr/sbin/diodload";
/// How often the tree's rows run (each server's best round is kept): a
/// round takes about 20 s a server under TCG, and on a shared machine one
/// server's rounds move by a third, so the best of five rather than three.
const ROUNDS_DEFAULT: u32 = 5;
/// How long the guest may run: the chat listings take about two minutes a
/// server under TCG, and the rest about two.
const RUN_DEADLINE: Duration = Duration::from_secs(1800);

struct Args {
    version: Option<String>,
    msize: Option<u32>,
    rounds: u32,
    diodload_secs: u32,
    diodload_threads: u32,
    bin: PathBuf,
    /// Trace what the kernel sends 9agents for one directory, instead of timing.
    trace_sample: Option<u32>,
    /// Trace the guest's scheduler over one directory's work, instead of timing.
    sched_trace: bool,
}

fn args() -> Result<Args, String> {
    let mut p = pico_args::Arguments::from_env();
    let _ = p.contains("--bench");
    let e = |e: pico_args::Error| e.to_string();
    let a = Args {
        version: p.opt_value_from_str("--version").map_err(e)?,
        msize: p.opt_value_from_str("--msize").map_err(e)?,
        rounds: p.opt_value_from_str("--rounds").map_err(e)?.unwrap_or(ROUNDS_DEFAULT),
        diodload_secs: p.opt_value_from_str("--diodload-secs").map_err(e)?.unwrap_or(5),
        diodload_threads: p.opt_value_from_str("--diodload-threads").map_err(e)?.unwrap_or(16),
        bin: p.opt_value_from_str("--bin").map_err(e)?.unwrap_or_else(|| PathBuf::from(common::BIN)),
        trace_sample: p.opt_value_from_str("--trace-sample").map_err(e)?,
        sched_trace: p.contains("--sched-trace"),
    };
    let rest = p.finish();
    if !rest.is_empty() {
        return Err(format!("unknown arguments {rest:?}"));
    }
    Ok(a)
}

fn say(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

fn main() -> ExitCode {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            say(&format!("diod bench: {e}"));
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(Skip(why)) => {
            say(&format!("diod bench SKIPPED: {why}"));
            ExitCode::SUCCESS
        }
    }
}

/// Why the bench cannot run here.
struct Skip(String);

impl From<String> for Skip {
    fn from(s: String) -> Skip {
        Skip(s)
    }
}

/// Whether the guest's run went without a failure (a bench exits 0 whatever
/// the figures, 1 when it could not measure them).
fn run(args: &Args) -> Result<bool, Skip> {
    let cache = Path::new(common::BIN).parent().and_then(Path::parent).unwrap().join("kernel-guest");
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    guest::qemu_present()?;
    for tool in [DIOD, DIODLOAD] {
        if !Path::new(tool).is_file() {
            return Err(Skip(format!("{tool} is missing (apt-get install diod)")));
        }
    }
    let kit = kit::get(&cache)?;
    let scratch = common::Scratch::new();
    let probe = scratch.root.join("probe");
    guest::compile_probe(&probe)?;
    let stage = Stage { root: scratch.root.join("initramfs") };
    let tree = build(&stage, args);
    let initrd = scratch.root.join("initramfs.cpio");
    let bins = [
        (args.bin.as_path(), "/bin/9agents"),
        (probe.as_path(), "/bin/probe"),
        (Path::new(DIOD), "/bin/diod"),
        (Path::new(DIODLOAD), "/bin/diodload"),
    ];
    guest::initramfs(&stage, &kit, include_bytes!("diod/init.sh"), &bins, &initrd).unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_dir_all(&stage.root).unwrap();
    say(&format!("diod bench: booting Linux {} with 9agents and diod", kit.release));
    let echo = |line: &str| {
        if ["BENCH ", "DIODLOAD ", "INFO ", "FAIL ", "SCHED ", "9agents-guest:", "["]
            .iter()
            .any(|p| line.starts_with(p))
        {
            say(line);
        }
    };
    let run =
        guest::boot(&kit, &initrd, &cache, &Mode::Checks, RUN_DEADLINE, &[], &echo).unwrap_or_else(|e| panic!("{e}"));
    say(&format!(
        "diod bench: {}: /init after {:.1} s, powered off after {:.1} s",
        run.accel,
        run.boot.as_secs_f64(),
        run.total.as_secs_f64()
    ));
    if args.sched_trace {
        println!("{}", sched_table(&run.lines));
    } else {
        println!("{}", table(&run.lines, &tree, args));
    }
    let done = run.lines.iter().any(|l| l.starts_with(guest::DONE_LINE));
    Ok(done && !run.lines.iter().any(|l| l.starts_with("FAIL ")))
}

/// What the tree holds, for the rows' labels.
struct Tree {
    entries: usize,
    files: usize,
    bytes: usize,
}

/// The fixture home, its agent, the chat's stand-in for diod, the list of
/// files `cat` reads, and `/fx/env`.
fn build(stage: &Stage, args: &Args) -> Tree {
    let home = "/fx/home";
    let (mut files, mut bytes) = (String::new(), 0);
    for d in 0..TREE_DIRS {
        for f in 0..TREE_FILES_PER_DIR {
            let k = d * TREE_FILES_PER_DIR + f;
            let size = FILE_SIZES[k % FILE_SIZES.len()];
            let data: Vec<u8> = (0..size).map(|i| (i * 31 + k) as u8).collect();
            let rel = format!("d{d:02}/f{f:03}");
            stage.write(&format!("{home}/.claude/projects/{TREE_NAME}/{rel}"), &data);
            writeln!(files, "{rel}").unwrap();
            bytes += size;
        }
    }
    stage.write("/fx/files", files.as_bytes());
    let cwd = format!("{home}/src/app");
    stage.mkdir(&cwd);
    let mut transcript = Vec::new();
    for i in 0..CHAT_MESSAGES {
        transcript.extend_from_slice(claude_user(&format!("prompt {i}"), i).as_bytes());
        transcript.push(b'\n');
        // The message 9agents serves for this line, as a file of diod's.
        stage.write(&format!("/fx/copy/chat/{i:08}-user"), format!("prompt {i}\n").as_bytes());
    }
    let rel = format!(".claude/projects/{}/{}.jsonl", claude_project_dir(Path::new(&cwd)), fixture::SID);
    stage.write(&format!("{home}/{rel}"), &transcript);
    fixture::agent(stage, "/fx", &cwd, &format!("{home}/{rel}"));
    let tree =
        Tree { entries: 1 + TREE_DIRS + TREE_DIRS * TREE_FILES_PER_DIR, files: TREE_DIRS * TREE_FILES_PER_DIR, bytes };
    let opts = args.version.as_ref().map_or(String::new(), |v| format!(",version={v}"));
    let both = args.msize.map_or(String::new(), |m| format!(",msize={m}"));
    let env = format!(
        "# Written by bench/diod.rs.\nTREE_NAME={TREE_NAME}\nTREE=claude/projects/{TREE_NAME}\nTREE_ENTRIES={}\n\
         TREE_FILES={}\nTREE_BYTES={}\nCHAT_MESSAGES={CHAT_MESSAGES}\nAGENT_PID={AGENT_PID}\n\
         NINEAGENTS_OPTS='{opts}'\nBOTH_OPTS='{both}'\nROUNDS={}\nDIODLOAD_SECS={}\nDIODLOAD_THREADS={}\n\
         TRACE_OPTS='{}'\nTRACE_LINES={}\nSCHED_TRACE={}\n",
        tree.entries,
        tree.files,
        tree.bytes,
        args.rounds,
        args.diodload_secs,
        args.diodload_threads,
        if args.trace_sample.is_some() { "-D" } else { "" },
        args.trace_sample.unwrap_or(0),
        if args.sched_trace { "1" } else { "" },
    );
    stage.write("/fx/env", env.as_bytes());
    // diod looks up the user each attach names: the kernel's first is "nobody".
    stage.write("/etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n");
    stage.write("/etc/group", b"root:x:0:\nnogroup:x:65534:\n");
    tree
}

/// One round of a row on one server, as its `BENCH` line gives it.
#[derive(Clone, Copy)]
struct Round {
    ops: f64,
    secs: f64,
    /// The server's CPU time in the round (all its threads), in USER_HZ
    /// ticks of 10 ms.
    ticks: f64,
}

/// USER_HZ: the ticks `/proc/PID/stat` counts in.
const TICKS_PER_SEC: f64 = 100.0;

/// A row's rounds for one server, or why there is no figure.
type Rounds = Result<Vec<Round>, String>;

/// The `BENCH` lines of a row, in the order they ran, or why the work came
/// out wrong in any round.
fn rounds(lines: &[String], work: &str, server: &str) -> Rounds {
    let prefix = format!("BENCH {work} {server} ");
    let mut out = Vec::new();
    for line in lines.iter().filter(|l| l.starts_with(&prefix)) {
        let fields: Vec<&str> = line[prefix.len()..].splitn(4, ' ').collect();
        let [ops, secs, ticks, verdict] = fields[..] else { return Err(format!("unreadable: {line}")) };
        if verdict != "ok" {
            return Err(verdict.to_string());
        }
        match (ops.parse(), secs.parse::<f64>(), ticks.parse()) {
            (Ok(ops), Ok(secs), Ok(ticks)) => out.push(Round { ops, secs: secs.max(0.01), ticks }),
            _ => return Err(format!("unreadable: {line}")),
        }
    }
    if out.is_empty() {
        return Err(format!("no {work} line from the guest"));
    }
    Ok(out)
}

/// The best round's ops per second.
fn best(r: &[Round]) -> f64 {
    r.iter().map(|r| r.ops / r.secs).fold(0.0, f64::max)
}

/// The server's CPU time per op over every round, in microseconds.
fn cpu_us_per_op(r: &[Round]) -> f64 {
    let (ticks, ops) = r.iter().fold((0.0, 0.0), |(t, o), r| (t + r.ticks, o + r.ops));
    ticks / TICKS_PER_SEC * 1e6 / ops.max(1.0)
}

/// `diodload`'s "N ops/s" (as one round of a second, its CPU unknown), or
/// what it printed instead.
fn diodload(lines: &[String], server: &str) -> Rounds {
    let prefix = format!("DIODLOAD {server} ");
    let line = lines.iter().find(|l| l.starts_with(&prefix)).ok_or("no diodload line from the guest")?;
    let said = line[prefix.len()..].trim();
    let ops = said.split(" ops/s").next().and_then(|s| s.rsplit(' ').next()).and_then(|n| n.parse::<f64>().ok());
    match ops {
        Some(n) if n > 0.0 && !said.contains("error") => Ok(vec![Round { ops: n, secs: 1.0, ticks: f64::NAN }]),
        _ => Err(collapsed(said)),
    }
}

/// diodload's messages (one a thread, run together on one line), each
/// distinct one once, with how many times it came.
fn collapsed(said: &str) -> String {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for msg in said.split("diodload: ").map(str::trim).filter(|m| !m.is_empty()) {
        match seen.iter_mut().find(|(m, _)| m == msg) {
            Some((_, n)) => *n += 1,
            None => seen.push((msg.to_string(), 1)),
        }
    }
    let parts: Vec<String> = seen.into_iter().map(|(m, n)| if n > 1 { format!("{m} (x{n})") } else { m }).collect();
    format!("diodload: {}", parts.join("; "))
}

/// `--sched-trace`'s lines (`SCHED server work thread switches us preempted`)
/// as one table a work: each kind of thread's switches to it, its run time
/// and how often it was preempted, for 9agents and diod side by side.
fn sched_table(lines: &[String]) -> String {
    let mut rows: Vec<(String, String, String, [u64; 3])> = Vec::new();
    for l in lines.iter().filter_map(|l| l.strip_prefix("SCHED ")) {
        let f: Vec<&str> = l.split_whitespace().collect();
        let n = |i: usize| f.get(i).and_then(|v| v.parse().ok()).unwrap_or(0);
        if f.len() >= 5 {
            rows.push((f[1].to_string(), f[2].to_string(), f[0].to_string(), [n(3), n(4), n(5)]));
        }
    }
    rows.sort();
    let mut out = format!(
        "
one directory's work, the guest's scheduler traced (tracing costs each switch: compare a server          with itself, not across)

{:<8} {:<16} {:<9} {:>9} {:>10} {:>10}
",
        "work", "thread", "server", "switches", "run us", "preempted"
    );
    for (work, thread, server, [sw, us, pre]) in rows {
        writeln!(out, "{work:<8} {thread:<16} {server:<9} {sw:>9} {us:>10} {pre:>10}").unwrap();
    }
    out
}

fn table(lines: &[String], tree: &Tree, args: &Args) -> String {
    let dialect = args.version.as_deref().unwrap_or("9p2000.L");
    let mb = tree.bytes as f64 / 1e6;
    let rows: [(String, Rounds, Rounds); 5] = [
        (
            format!("find -exec stat ({} entries)", tree.entries),
            rounds(lines, "find-stat", "9agents"),
            rounds(lines, "find-stat", "diod"),
        ),
        (
            format!("ls -lR ({} entries)", tree.entries - 1),
            rounds(lines, "ls-lR", "9agents"),
            rounds(lines, "ls-lR", "diod"),
        ),
        (
            format!("cat every file ({} files, {mb:.1} MB)", tree.files),
            rounds(lines, "cat", "9agents"),
            rounds(lines, "cat", "diod"),
        ),
        (
            format!("ls -l chat ({CHAT_MESSAGES} msgs; diod: files)"),
            rounds(lines, "ls-l-chat", "9agents"),
            rounds(lines, "ls-l-chat", "diod"),
        ),
        (
            format!("diodload -g ({} threads, {} s)", args.diodload_threads, args.diodload_secs),
            diodload(lines, "9agents"),
            diodload(lines, "diod"),
        ),
    ];
    let msize = |server: &str| {
        let line = lines.iter().find(|l| l.starts_with("INFO mount: ") && l.contains(&format!("/mnt/{server} ")));
        let opt = line.and_then(|l| l.split([',', ' ']).find(|o| o.starts_with("msize=")));
        opt.map_or("131072 (the kernel's default)".to_string(), |o| o["msize=".len()..].to_string())
    };
    let mut out = format!(
        "\n9agents ({dialect}, one thread) against diod (9P2000.L, 16 threads), each mounted by the kernel's 9p client\n\
         over a unix socket (msize: 9agents {}, diod {}); best of {} rounds, the chat's once; the servers' CPU\n\
         per op over every round (all their threads, in the guest):\n\n\
         {:<44} {:>14} {:>14} {:>13} {:>20}\n",
        msize("9agents"),
        msize("diod"),
        args.rounds,
        "work",
        "9agents ops/s",
        "diod ops/s",
        "9agents/diod",
        "CPU us/op 9a / diod"
    );
    let (mut notes, mut per_round) = (String::new(), String::new());
    for (label, ours, theirs) in rows {
        let cell = |r: &Rounds| r.as_ref().map_or("-".to_string(), |v| format!("{:.1}", best(v)));
        let cpu = |r: &Rounds| match r {
            Ok(v) if cpu_us_per_op(v).is_finite() => format!("{:.0}", cpu_us_per_op(v)),
            _ => "-".to_string(),
        };
        let ratio = match (&ours, &theirs) {
            (Ok(a), Ok(b)) => format!("{:.2}x {}", best(a) / best(b), if best(a) >= best(b) { "MET" } else { "MISS" }),
            _ => "n/a".to_string(),
        };
        let cpus = format!("{} / {}", cpu(&ours), cpu(&theirs));
        writeln!(out, "{label:<44} {:>14} {:>14} {ratio:>13} {cpus:>20}", cell(&ours), cell(&theirs)).unwrap();
        if let (Ok(a), Ok(b)) = (&ours, &theirs) {
            if a.len() > 1 && a.len() == b.len() {
                let each: Vec<String> = a.iter().zip(b).map(|(a, b)| format!("{:.2}x", b.secs / a.secs)).collect();
                writeln!(per_round, "  {label}: {}", each.join(" ")).unwrap();
            }
        }
        for (who, r) in [("9agents", &ours), ("diod", &theirs)] {
            if let Err(why) = r {
                writeln!(notes, "  {label}, {who}: {why}").unwrap();
            }
        }
    }
    if !per_round.is_empty() {
        write!(out, "\neach round's 9agents/diod, in the order they ran (the servers take turns):\n{per_round}")
            .unwrap();
    }
    if !notes.is_empty() {
        write!(out, "\nno rate:\n{notes}").unwrap();
    }
    for fail in lines.iter().filter(|l| l.starts_with("FAIL ")) {
        writeln!(out, "{fail}").unwrap();
    }
    out
}
