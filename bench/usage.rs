//! `cargo bench --bench usage -- [options]`: `/usage/daily` over a whole
//! generated home, through the daemon, against ccusage's `daily` over the
//! same home in the same run (issue 22).
//!
//! The home: `--claude` Claude Code sessions whose sizes follow a real
//! home's (most small, a long tail: eleven in twelve of 40–400 KB, one in
//! twelve 0.4–4 MB, one in 200 of 20–90 MB), each with its own reply ids,
//! spread over thirty days and three models, 100 to a project; one more
//! session resumes the first (its history copied, replies and all, as
//! Claude Code's `--resume` writes it); and `--codex` codex rollouts of
//! about `--codex-bytes` each, as codex 0.17x writes them (a running total
//! growing by each turn's `last_token_usage`). Then, in one run:
//!
//! 1. the daemon's first `cat /usage/daily` (walk, open, read, clunk),
//!    another client stat'ing `/README` meanwhile (p50, p99, max), and the
//!    daemon's peak RSS (`VmHWM`) after it;
//! 2. the second read, nothing changed (`--again` times, the fastest);
//! 3. `ccusage daily --offline --json --by-agent -z UTC` on the same home
//!    (`--ccusage PATH`, else `ccusage` on `PATH`; skipped, saying how to
//!    install it, when there is none), its wall time; the first read's
//!    time against it, the second's too;
//! 4. both tools' totals per harness and kind side by side.
//!
//! ccusage: `npm install ccusage@20.0.24` puts it, with its native
//! package `@ccusage/ccusage-linux-x64`, under `node_modules/.bin` (20.0.26
//! was published without the native package for linux-x64). The tests
//! never need it. A bench prints; nothing here is a timed assertion.

#[path = "gen_home.rs"]
mod gen_home;
#[path = "gen_rollout.rs"]
mod gen_rollout;
mod harness;

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use harness::{ms, print_table, quantile, sorted, Daemon, Row, Scratch};
use nineagents::client::Client;
use nineagents::proto::OREAD;

const USAGE: &str = "\
usage: cargo bench --bench usage -- [--claude 2000] [--codex 200] [--codex-bytes 1000000]
                                    [--again 3] [--ccusage PATH] [--bin PATH]
";

const MSIZE: u32 = 1 << 20;
const IO_TIMEOUT: Duration = Duration::from_secs(600);
/// Issue 22's targets.
const TARGET_FIRST: f64 = 1.0;
const TARGET_AGAIN: f64 = 0.05;
const TARGET_AGAIN_MS: f64 = 50.0;
const TARGET_STAT_P99: Duration = Duration::from_millis(2);
const TARGET_RSS_MIB: u64 = 64;

struct Opts {
    claude: usize,
    codex: usize,
    codex_bytes: u64,
    again: usize,
    ccusage: Option<PathBuf>,
    bin: PathBuf,
}

fn main() -> ExitCode {
    harness::main("usage", USAGE, parse, run)
}

fn parse(mut p: pico_args::Arguments) -> Result<Opts, String> {
    let e = |e: pico_args::Error| e.to_string();
    let opts = Opts {
        claude: p.opt_value_from_str("--claude").map_err(e)?.unwrap_or(2000),
        codex: p.opt_value_from_str("--codex").map_err(e)?.unwrap_or(200),
        codex_bytes: p.opt_value_from_str("--codex-bytes").map_err(e)?.unwrap_or(1_000_000),
        again: p.opt_value_from_str("--again").map_err(e)?.unwrap_or(3),
        ccusage: p.opt_value_from_str("--ccusage").map_err(e)?,
        bin: p.opt_value_from_str("--bin").map_err(e)?.unwrap_or_else(harness::default_bin),
    };
    harness::finish(p)?;
    if opts.claude == 0 || opts.codex_bytes < 65_536 {
        return Err("--claude must be at least 1 and --codex-bytes at least 65536".into());
    }
    Ok(opts)
}

fn read_file(c: &mut Client, path: &str) -> io::Result<Vec<u8>> {
    let fid = c.walk(path)?;
    c.open(fid, OREAD)?;
    let data = c.read_all(fid);
    c.clunk(fid)?;
    data
}

/// Tokens by harness and kind (input, output, cache_read, cache_write),
/// and the cost where known.
type Totals = Vec<(String, [u64; 4], f64)>;

/// `Totals` from `/usage/daily`'s rows.
fn ours(daily: &[u8]) -> Totals {
    let mut by: Totals = Vec::new();
    for l in String::from_utf8_lossy(daily).lines().skip(1) {
        let c: Vec<&str> = l.split_whitespace().collect();
        if c.len() < 9 || c[1] == "total" {
            continue;
        }
        let i = by.iter().position(|(h, ..)| h == c[1]).unwrap_or_else(|| {
            by.push((c[1].to_string(), [0; 4], 0.0));
            by.len() - 1
        });
        for k in 0..4 {
            by[i].1[k] += c[3 + k].parse::<u64>().unwrap_or(0);
        }
        by[i].2 += c[8].trim_end_matches("+?").parse::<f64>().unwrap_or(0.0);
    }
    by
}

/// ccusage's totals by agent, and its wall time.
fn ccusage(bin: &Path, home: &Path) -> io::Result<(Duration, Totals)> {
    let t = Instant::now();
    let out = Command::new(bin)
        .args(["daily", "--offline", "--json", "--by-agent", "-z", "UTC"])
        .env("HOME", home)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()?;
    let took = t.elapsed();
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| io::Error::other(format!("ccusage's JSON: {e}")))?;
    let mut by: Totals = Vec::new();
    for day in v["daily"].as_array().into_iter().flatten() {
        for a in day["agents"].as_array().into_iter().flatten() {
            let name = a["agent"].as_str().unwrap_or("?").to_string();
            let i = by.iter().position(|(h, ..)| *h == name).unwrap_or_else(|| {
                by.push((name, [0; 4], 0.0));
                by.len() - 1
            });
            let n = |k: &str| a[k].as_u64().unwrap_or(0);
            let got = [n("inputTokens"), n("outputTokens"), n("cacheReadTokens"), n("cacheCreationTokens")];
            for (s, g) in by[i].1.iter_mut().zip(got) {
                *s += g;
            }
            by[i].2 += a["totalCost"].as_f64().unwrap_or(0.0);
        }
    }
    Ok((took, by))
}

fn find_ccusage(opts: &Opts) -> Option<PathBuf> {
    if let Some(p) = &opts.ccusage {
        return Some(p.clone());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("ccusage")).find(|p| p.is_file())
}

fn run(opts: &Opts) -> io::Result<()> {
    println!("usage: {} on {}", opts.bin.display(), harness::machine());
    let s = Scratch::new("usage")?;
    let t = Instant::now();
    let bytes = gen_home::world(opts.claude, opts.codex, opts.codex_bytes, &s.dir.join("home"))?;
    println!(
        "usage: scratch {}: {} claude sessions and a resumed one, {} codex rollouts, {:.2} GB, written in {:.1} s",
        s.dir.display(),
        opts.claude,
        opts.codex,
        bytes as f64 / 1e9,
        t.elapsed().as_secs_f64()
    );
    let proc = s.fixture_proc()?;
    let d = Daemon::spawn(
        &opts.bin,
        &s,
        &[std::ffi::OsStr::new("--proc"), proc.as_os_str(), "--tz".as_ref(), "UTC".as_ref()],
    )?;
    let mut c = harness::client(&d.sock, MSIZE, IO_TIMEOUT)?;
    let stats = harness::stat_client(harness::client(&d.sock, MSIZE, IO_TIMEOUT)?);
    let t = Instant::now();
    let daily = read_file(&mut c, "usage/daily")?;
    let first = t.elapsed();
    let stat_times = sorted(&harness::stop_stats(stats)?);
    let hwm = harness::Mem::of(d.pid)?.hwm_kib;
    let mut again = Duration::MAX;
    for _ in 0..opts.again.max(1) {
        let t = Instant::now();
        let text = read_file(&mut c, "usage/daily")?;
        again = again.min(t.elapsed());
        if text != daily {
            return Err(io::Error::other("the second read differs from the first, nothing changed"));
        }
    }
    let mine = ours(&daily);
    let mut rows = vec![
        Row::new(
            "1",
            "daemon: first cat /usage/daily",
            format!("{:.0} ms, {:.2} GB/s", ms(first), bytes as f64 / 1e9 / first.as_secs_f64()),
            "-",
            None,
        ),
        Row::new(
            "1",
            "other stat p50 / p99 / max",
            format!(
                "{:.3} / {:.3} / {:.3} ms (n {})",
                ms(quantile(&stat_times, 0.5)),
                ms(quantile(&stat_times, 0.99)),
                ms(*stat_times.last().unwrap_or(&Duration::ZERO)),
                stat_times.len()
            ),
            "p99 <= 2 ms",
            Some(quantile(&stat_times, 0.99) <= TARGET_STAT_P99),
        ),
        Row::new(
            "1",
            "daemon peak RSS (VmHWM)",
            format!("{:.1} MiB", hwm as f64 / 1024.0),
            "<= 64 MiB",
            Some(hwm <= TARGET_RSS_MIB * 1024),
        ),
        Row::new(
            "2",
            "daemon: again, nothing changed",
            format!("{:.1} ms", ms(again)),
            "<= 50 ms",
            Some(ms(again) <= TARGET_AGAIN_MS),
        ),
    ];
    match find_ccusage(opts) {
        None => println!("usage: no ccusage (npm install ccusage@20.0.24, then --ccusage node_modules/.bin/ccusage): its rows skipped"),
        Some(bin) => {
            let (took, theirs) = ccusage(&bin, &s.dir.join("home"))?;
            let (r1, r2) = (first.as_secs_f64() / took.as_secs_f64(), again.as_secs_f64() / took.as_secs_f64());
            rows.push(Row::new("3", "ccusage daily --offline --json", format!("{:.0} ms", ms(took)), "-", None));
            rows.push(Row::new("3", "first read / ccusage", format!("{r1:.2}x"), "<= 1.0x", Some(r1 <= TARGET_FIRST)));
            rows.push(Row::new("3", "again / ccusage", format!("{r2:.3}x"), "<= 0.05x", Some(r2 <= TARGET_AGAIN)));
            for (h, t, cost) in &theirs {
                rows.push(Row::new("4", &format!("ccusage {h}: in out read write, cost"), format!("{t:?} {cost:.4}"), "-", None));
            }
        }
    }
    for (h, t, cost) in &mine {
        rows.push(Row::new(
            "4",
            &format!("9agents {h}: in out read write, cost"),
            format!("{t:?} {cost:.4}"),
            "-",
            None,
        ));
    }
    print_table(&rows);
    d.stop()
}
