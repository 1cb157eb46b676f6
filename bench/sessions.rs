//! `cargo bench --bench sessions -- [options]`: how long listing
//! `/sessions/claude` takes in a home of 10,000 claude sessions, and what
//! another client's stat sees meanwhile.
//!
//! A scratch home of the bench's own (removed at the end): `--sessions`
//! claude transcripts of a few records each, spread over `--projects`
//! project directories, and — the baseline, measured in the same run — one
//! plain directory of as many files, mirrored at `/dsh/plain`. Against one
//! daemon (the `9agents` cargo built for the bench), `--runs` times each:
//!
//! 1. **listing**: walk, open and read the whole directory (9P2000's
//!    directory read carries each entry's stat, as `ls -l` shows it), of
//!    `/sessions/claude` and of the baseline.
//! 2. **stat each**: walk to and stat every entry of the listing, as a
//!    kernel mount's `ls -l` does after its readdir.
//! 3. **another client**: while the listing runs on one connection, a
//!    second connection stats `/README` in a loop; its p99, during
//!    `/sessions/claude`'s listing and during the baseline's.
//!
//! A bench prints; nothing here is a timed assertion. Each figure with a
//! target says PASS or MISS; the ratios are against the baseline of the
//! same run. See bench/README.md.

mod harness;

use std::io;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::{ms, print_table, quantile, sorted, Daemon, Row, Scratch};
use nineagents::client::Client;
use nineagents::proto::OREAD;

const USAGE: &str = "\
usage: cargo bench --bench sessions -- [--sessions 10000] [--projects 100] [--runs 10] [--bin PATH]
";

/// The targets: the listing within 200 ms, another client's stat
/// p99 within 2 ms meanwhile.
const TARGET_LIST: Duration = Duration::from_millis(200);
const TARGET_STAT_P99: Duration = Duration::from_millis(2);
const MSIZE: u32 = 1 << 20;
const IO_TIMEOUT: Duration = Duration::from_secs(60);

struct Opts {
    sessions: usize,
    projects: usize,
    runs: usize,
    bin: std::path::PathBuf,
}

fn main() -> ExitCode {
    harness::main("sessions", USAGE, parse, run)
}

fn parse(mut p: pico_args::Arguments) -> Result<Opts, String> {
    let e = |e: pico_args::Error| e.to_string();
    let opts = Opts {
        sessions: p.opt_value_from_str("--sessions").map_err(e)?.unwrap_or(10_000),
        projects: p.opt_value_from_str("--projects").map_err(e)?.unwrap_or(100),
        runs: p.opt_value_from_str("--runs").map_err(e)?.unwrap_or(10),
        bin: p.opt_value_from_str("--bin").map_err(e)?.unwrap_or_else(harness::default_bin),
    };
    harness::finish(p)?;
    if opts.sessions == 0 || opts.projects == 0 || opts.runs == 0 || opts.projects > opts.sessions {
        return Err("--sessions, --projects and --runs must be at least 1, --projects at most --sessions".into());
    }
    Ok(opts)
}

/// The fixture home: the sessions, and the baseline's plain directory.
fn world(opts: &Opts) -> io::Result<Scratch> {
    let s = Scratch::new("sessions")?;
    let home = s.dir.join("home");
    let projects = home.join(".claude/projects");
    for i in 0..opts.sessions {
        let dir = projects.join(format!("-home-u-src-p{:03}", i % opts.projects));
        if i < opts.projects {
            std::fs::create_dir_all(&dir)?;
        }
        let sid = format!("{:08x}-0000-4000-8000-{:012x}", i, i);
        let text = format!(
            "{{\"type\":\"user\",\"sessionId\":\"{sid}\",\"cwd\":\"/home/u/src/p\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"message\":{{\"role\":\"user\",\"content\":\"hello {i}\"}}}}\n"
        );
        std::fs::write(dir.join(format!("{sid}.jsonl")), text)?;
    }
    let plain = home.join(".dsh/plain");
    std::fs::create_dir_all(&plain)?;
    for i in 0..opts.sessions {
        std::fs::write(plain.join(format!("{:08x}-0000-4000-8000-{:012x}", i, i)), b"x\n")?;
    }
    Ok(s)
}

fn run(opts: &Opts) -> io::Result<()> {
    harness::raise_nofile();
    println!("sessions: {} on {}", opts.bin.display(), harness::machine());
    let s = world(opts)?;
    println!("sessions: scratch {} ({} sessions in {} projects)", s.dir.display(), opts.sessions, opts.projects);
    let proc = s.fixture_proc()?;
    let d = Daemon::spawn(&opts.bin, &s, &[std::ffi::OsStr::new("--proc"), proc.as_os_str()])?;
    if let Ok(f) = std::env::var("SESSIONS_BENCH_PID_FILE") {
        std::fs::write(f, d.pid.to_string())?;
        std::thread::sleep(Duration::from_secs(1));
    }
    let mut rows = Vec::new();
    let r = measure(opts, &d.sock, &mut rows);
    d.stop()?;
    r?;
    print_table(&rows);
    Ok(())
}

fn measure(opts: &Opts, sock: &Path, rows: &mut Vec<Row>) -> io::Result<()> {
    let mut c = session(sock)?;
    let (sessions, plain) = ("sessions/claude", "dsh/plain");
    let n = list(&mut c, sessions)?.1;
    if n != opts.sessions {
        return Err(io::Error::other(format!("/{sessions} listed {n} entries, not {}", opts.sessions)));
    }
    let time_list = |c: &mut Client, path: &str| -> io::Result<Duration> {
        let mut t = Vec::new();
        for _ in 0..opts.runs {
            t.push(list(c, path)?.0);
        }
        Ok(quantile(&sorted(&t), 0.5))
    };
    let (ls, lb) = (time_list(&mut c, sessions)?, time_list(&mut c, plain)?);
    rows.push(Row::new(
        "1",
        "list /sessions/claude (median)",
        format!("{:.1} ms", ms(ls)),
        "<= 200 ms",
        Some(ls <= TARGET_LIST),
    ));
    rows.push(Row::new("1", "list baseline /dsh/plain (median)", format!("{:.1} ms", ms(lb)), "-", None));
    rows.push(Row::new("1", "ratio to baseline", format!("{:.2}x", ls.as_secs_f64() / lb.as_secs_f64()), "-", None));
    let (ss, sb) = (stat_each(&mut c, sessions)?, stat_each(&mut c, plain)?);
    rows.push(Row::new("2", "walk+stat each session", format!("{:.1} ms", ms(ss)), "-", None));
    rows.push(Row::new("2", "walk+stat each baseline file", format!("{:.1} ms", ms(sb)), "-", None));
    rows.push(Row::new("2", "ratio to baseline", format!("{:.2}x", ss.as_secs_f64() / sb.as_secs_f64()), "-", None));
    let (ps, pb) = (other_client(opts, sock, sessions)?, other_client(opts, sock, plain)?);
    let p = Some(ps <= TARGET_STAT_P99);
    rows.push(Row::new("3", "other stat p99 during sessions", format!("{:.3} ms", ms(ps)), "<= 2 ms", p));
    rows.push(Row::new("3", "other stat p99 during baseline", format!("{:.3} ms", ms(pb)), "-", None));
    rows.push(Row::new("3", "ratio to baseline", format!("{:.2}x", ps.as_secs_f64() / pb.as_secs_f64()), "-", None));
    Ok(())
}

fn session(sock: &Path) -> io::Result<Client> {
    harness::client(sock, MSIZE, IO_TIMEOUT)
}

/// Walk, open and read a whole directory: the time, and its entries.
fn list(c: &mut Client, path: &str) -> io::Result<(Duration, usize)> {
    let t = Instant::now();
    let fid = c.walk(path)?;
    c.open(fid, OREAD)?;
    let n = c.read_dir(fid)?.len();
    c.clunk(fid)?;
    Ok((t.elapsed(), n))
}

/// Walk to and stat every entry of a directory, one after another.
fn stat_each(c: &mut Client, path: &str) -> io::Result<Duration> {
    let fid = c.walk(path)?;
    c.open(fid, OREAD)?;
    let names: Vec<String> = c.read_dir(fid)?.into_iter().map(|s| s.name).collect();
    c.clunk(fid)?;
    let t = Instant::now();
    for name in &names {
        let f = c.walk(&format!("{path}/{name}"))?;
        c.stat(f)?;
        c.clunk(f)?;
    }
    Ok(t.elapsed())
}

/// The p99 of another connection's stat of `/README` while `path` is
/// listed `--runs` times on a first.
fn other_client(opts: &Opts, sock: &Path, path: &str) -> io::Result<Duration> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut other = session(sock)?;
    let flag = stop.clone();
    let stats = std::thread::spawn(move || -> io::Result<Vec<Duration>> {
        let fid = other.walk("README")?;
        let mut t = Vec::new();
        while !flag.load(Ordering::Relaxed) {
            let at = Instant::now();
            other.stat(fid)?;
            t.push(at.elapsed());
        }
        Ok(t)
    });
    let mut c = session(sock)?;
    for _ in 0..opts.runs {
        list(&mut c, path)?;
    }
    stop.store(true, Ordering::Relaxed);
    let t = stats.join().map_err(|_| io::Error::other("the stat thread panicked"))??;
    if t.is_empty() {
        return Err(io::Error::other("no stat was timed"));
    }
    Ok(quantile(&sorted(&t), 0.99))
}
