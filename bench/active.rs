//! `cargo bench --bench active -- [options]`: what `/active` costs on a
//! busy machine — `--agents` Claude Code agents among `--processes`
//! processes in all (issue 21, defect 8: herdr's users measured 2.76 s at
//! 198 panes; the daemon took 96 ms a listing, 9.3% of a CPU idle with
//! `/active/wait` parked, and 51 MB).
//!
//! A fixture process table (`--proc`) of the bench's own: the agents, each
//! with its registry record and a transcript as `wait.rs` makes them, and
//! the rest shells (`bash -l`), all removed at the end. Against one fresh
//! daemon (the `9agents` cargo built for the bench), in one run:
//!
//! 1. **listing**: `ls /active/claude` (walk, open, read every entry,
//!    clunk) the first time, then `--listings` more, each checked to list
//!    every agent; the baseline, the same client listing `/` (a static
//!    directory, no scan), as many times. Target: a listing ≤ 20 ms.
//! 2. **idle**: the daemon's CPU over `--idle-secs` with nothing asked of
//!    it (the baseline), then over as long again with a read of
//!    `/active/wait` parked (it rescans every second), first at once, then
//!    once `--settle-secs` have passed: the processes judged at the first
//!    listing are judged again at first after a second, then after a while
//!    that doubles to a minute (`active::judged`), so the first window
//!    holds that warm-up and the second is the daemon as it idles for
//!    good. Target ≤ 1% of a CPU, settled. The CPU is the whole process's
//!    (the loop and the kernel's workers for its ring), from
//!    /proc/<pid>/stat.
//! 3. **memory**: the daemon's RSS fresh, and after 1 and 2. Target ≤ 16 MB.
//!
//! A bench prints; nothing here is a timed assertion. See bench/README.md.

mod harness;

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use harness::{ms, print_table, quantile, sorted, Cpu, Daemon, Mem, Row, Scratch};
use nineagents::client::Client;
use nineagents::proto::{Tmsg, OREAD};

const USAGE: &str = "\
usage: cargo bench --bench active -- [--agents 200] [--processes 3200] [--listings 20]
                                     [--idle-secs 10] [--settle-secs 70] [--bin PATH]

  --agents N      fixture Claude Code agents (default 200)
  --processes N   processes in all, the agents among them (default 3200)
  --listings N    listings timed after the first (default 20)
  --idle-secs S   seconds the idle daemon is measured, each way (default 10)
  --settle-secs S seconds after the first listing the settled window starts (default 70)
  --bin PATH      the daemon (default: the 9agents cargo built for this bench)
";

/// Issue 21's targets.
const TARGET_LISTING: Duration = Duration::from_millis(20);
const TARGET_IDLE_CPU: f64 = 0.01;
const TARGET_RSS_KIB: u64 = 16 * 1024;
/// The first fixture pid; the shells follow the agents.
const PID0: u32 = 20_000;
const IO_TIMEOUT: Duration = Duration::from_secs(60);
const MSIZE: u32 = 64 * 1024;
const CWD: &str = "/home/bench/src/app";
const PROJECT: &str = "-home-bench-src-app";

struct Opts {
    agents: usize,
    processes: usize,
    listings: usize,
    idle_secs: u64,
    settle_secs: u64,
    bin: PathBuf,
}

fn main() -> ExitCode {
    harness::main("active", USAGE, parse, run)
}

fn parse(mut p: pico_args::Arguments) -> Result<Opts, String> {
    let e = |e: pico_args::Error| e.to_string();
    let opts = Opts {
        agents: p.opt_value_from_str("--agents").map_err(e)?.unwrap_or(200),
        processes: p.opt_value_from_str("--processes").map_err(e)?.unwrap_or(3200),
        listings: p.opt_value_from_str("--listings").map_err(e)?.unwrap_or(20),
        idle_secs: p.opt_value_from_str("--idle-secs").map_err(e)?.unwrap_or(10),
        settle_secs: p.opt_value_from_str("--settle-secs").map_err(e)?.unwrap_or(70),
        bin: p.opt_value_from_str("--bin").map_err(e)?.unwrap_or_else(harness::default_bin),
    };
    harness::finish(p)?;
    if opts.agents == 0 || opts.processes < opts.agents || opts.listings == 0 || opts.idle_secs == 0 {
        return Err("--agents, --listings and --idle-secs must be at least 1, --processes at least --agents".into());
    }
    Ok(opts)
}

fn run(opts: &Opts) -> io::Result<()> {
    harness::raise_nofile();
    println!("active: {} on {}", opts.bin.display(), harness::machine());
    let s = Scratch::new("active")?;
    let t = Instant::now();
    let proc = world(opts, &s)?;
    println!(
        "active: scratch {}: {} agents among {} processes, made in {:.1} s",
        s.dir.display(),
        opts.agents,
        opts.processes,
        t.elapsed().as_secs_f64()
    );
    let d = Daemon::spawn(&opts.bin, &s, &["--proc", &proc.to_string_lossy()])?;
    let fresh = d.settled_mem()?;
    let mut rows = Vec::new();
    let mut c = harness::client(&d.sock, MSIZE, IO_TIMEOUT)?;

    // 1. Listings.
    let sc = format!("1 listing, {} of {}", opts.agents, opts.processes);
    let listed_at = Instant::now();
    let (first, n) = timed_listing(&mut c, "active/claude")?;
    check(n, opts.agents)?;
    let after_first = (Mem::of(d.pid)?, d.status_field("heap").unwrap_or(0));
    let mut warm = Vec::with_capacity(opts.listings);
    for _ in 0..opts.listings {
        let (t, n) = timed_listing(&mut c, "active/claude")?;
        check(n, opts.agents)?;
        warm.push(t);
    }
    let mut base = Vec::with_capacity(opts.listings);
    for _ in 0..opts.listings {
        base.push(timed_listing(&mut c, "")?.0);
    }
    let (warm, base) = (sorted(&warm), sorted(&base));
    let p50 = quantile(&warm, 0.5);
    rows.push(Row::new(&sc, "ls /active/claude, the first", format!("{:.1} ms", ms(first)), "-", None));
    rows.push(Row::new(
        &sc,
        "ls /active/claude, p50 of the rest",
        format!("{:.1} ms (max {:.1} ms)", ms(p50), ms(quantile(&warm, 1.0))),
        &format!("<= {} ms", TARGET_LISTING.as_millis()),
        Some(p50 <= TARGET_LISTING),
    ));
    let b50 = quantile(&base, 0.5);
    rows.push(Row::new(
        &sc,
        "baseline: ls /, p50",
        format!("{:.2} ms ({:.0}x)", ms(b50), p50.as_secs_f64() / b50.as_secs_f64().max(1e-9)),
        "-",
        None,
    ));

    // 2. Idle, then idle with /active/wait parked.
    let sc = "2 idle".to_string();
    let span = Duration::from_secs(opts.idle_secs);
    let idle = cpu_share(&d, span)?;
    let fid = c.walk("active/wait")?;
    c.open(fid, OREAD)?;
    c.send(&Tmsg::Read { fid, offset: 0, count: 4096 })?;
    let warming = cpu_share(&d, span)?;
    std::thread::sleep(Duration::from_secs(opts.settle_secs).saturating_sub(listed_at.elapsed()));
    let parked = cpu_share(&d, span)?;
    rows.push(Row::new(&sc, "CPU, nothing asked (baseline)", format!("{:.2}%", idle * 100.0), "-", None));
    rows.push(Row::new(&sc, "CPU, /active/wait parked at once", format!("{:.2}%", warming * 100.0), "-", None));
    rows.push(Row::new(
        &sc,
        &format!("CPU, /active/wait parked, {} s on", opts.settle_secs),
        format!("{:.2}%", parked * 100.0),
        &format!("<= {:.0}%", TARGET_IDLE_CPU * 100.0),
        Some(parked <= TARGET_IDLE_CPU),
    ));

    // 3. Memory.
    let sc = "3 memory".to_string();
    let now = Mem::of(d.pid)?;
    rows.push(Row::new(&sc, "RSS fresh (baseline)", format!("{} KiB", fresh.rss_kib), "-", None));
    rows.push(Row::new(
        &sc,
        "RSS after the first listing",
        format!("{} KiB (heap in use {} KiB)", after_first.0.rss_kib, after_first.1 / 1024),
        "-",
        None,
    ));
    rows.push(Row::new(
        &sc,
        "RSS after 1 and 2",
        format!(
            "{} KiB (HWM {} KiB, heap in use {} KiB)",
            now.rss_kib,
            now.hwm_kib,
            d.status_field("heap").unwrap_or(0) / 1024
        ),
        &format!("<= {} MB", TARGET_RSS_KIB / 1024),
        Some(now.rss_kib <= TARGET_RSS_KIB),
    ));
    print_table(&rows);
    d.stop()
}

/// A whole listing of `path` (walk, open, every entry read, clunk): its
/// time and how many entries it had.
fn timed_listing(c: &mut Client, path: &str) -> io::Result<(Duration, usize)> {
    let t = Instant::now();
    let fid = c.walk(path)?;
    c.open(fid, OREAD)?;
    let n = c.read_dir(fid)?.len();
    c.clunk(fid)?;
    Ok((t.elapsed(), n))
}

fn check(listed: usize, agents: usize) -> io::Result<()> {
    match listed == agents {
        true => Ok(()),
        false => Err(io::Error::other(format!("/active/claude listed {listed} agents of {agents}"))),
    }
}

/// The daemon's share of one CPU over `span`.
fn cpu_share(d: &Daemon, span: Duration) -> io::Result<f64> {
    let of = || Cpu::of(d.pid).ok_or_else(|| io::Error::other("the daemon's /proc/<pid>/stat"));
    let (a, t) = (of()?, Instant::now());
    std::thread::sleep(span);
    let b = of()?;
    Ok((b.secs - a.secs) / t.elapsed().as_secs_f64())
}

/// The fixture: a process table of agents and shells, and the agents'
/// records and transcripts; the process table's path.
fn world(opts: &Opts, s: &Scratch) -> io::Result<PathBuf> {
    let proc = s.fixture_proc()?;
    let claude = s.dir.join("home/.claude");
    let project = claude.join("projects").join(PROJECT);
    std::fs::create_dir_all(claude.join("sessions"))?;
    std::fs::create_dir_all(&project)?;
    let middle = vec!["0"; 17].join(" ");
    for i in 0..opts.processes {
        let pid = PID0 + i as u32;
        let dir = proc.join(pid.to_string());
        std::fs::create_dir_all(&dir)?;
        let start = 500_000 + u64::from(pid);
        if i >= opts.agents {
            std::fs::write(dir.join("stat"), format!("{pid} (bash) S 1 {middle} {start} 5000 300\n"))?;
            std::fs::write(dir.join("cmdline"), b"bash\0-l\0")?;
            continue;
        }
        agent(&dir, &claude, &project, pid, i, start)?;
    }
    Ok(proc)
}

/// Agent `i` at pid `pid`: its process, its record (idle), its transcript.
fn agent(dir: &Path, claude: &Path, project: &Path, pid: u32, i: usize, start: u64) -> io::Result<()> {
    harness::fixture_claude_process(dir, pid, start, CWD)?;
    let sid = format!("00000000-0000-4000-8000-{i:012}");
    let record = harness::claude_record(pid, &sid, CWD, start, "idle", &format!("bench-{i}"));
    std::fs::write(claude.join("sessions").join(format!("{pid}.json")), record)?;
    let line = format!(
        "{{\"type\":\"user\",\"cwd\":\"{CWD}\",\"sessionId\":\"{sid}\",\"message\":{{\"role\":\"user\",\"content\":\"hello\"}},\"timestamp\":\"2026-11-28T10:00:00.000Z\"}}\n"
    );
    std::fs::write(project.join(format!("{sid}.jsonl")), line)
}
