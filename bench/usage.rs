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

#[path = "gen_rollout.rs"]
mod gen_rollout;
mod harness;

use std::io::{self, Write};
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
const PER_PROJECT: usize = 100;
/// Issue 22's targets.
const TARGET_FIRST: f64 = 1.0;
const TARGET_AGAIN: f64 = 0.05;
const TARGET_AGAIN_MS: f64 = 50.0;
const TARGET_STAT_P99: Duration = Duration::from_millis(2);
const TARGET_RSS_MIB: u64 = 64;
/// 2026-11-01T00:00:00Z: the first day of the home's thirty.
const DAY0: u64 = 1_793_491_200;

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

/// A session's size, by its number: a real home's shape, deterministic.
fn size_of(i: usize, r: &mut gen_rollout::Rng) -> usize {
    match (i % 200, i % 50) {
        (0, _) => r.range(20_000, 90_000) * 1000,
        (_, 1..=4) => r.range(400, 4000) * 1000,
        _ => r.range(40, 400) * 1000,
    }
}

/// A Claude Code transcript of about `bytes`, session `n`: prompts and
/// replies, each reply its own `message.id` and `requestId`, one record a
/// content block (the usage repeated, the output growing, as Claude Code
/// streams), at times over thirty days.
fn claude_transcript(n: usize, sid: &str, bytes: usize, out: &mut Vec<u8>) {
    let mut r = gen_rollout::Rng::new(0x5e55_1075 ^ n as u64);
    let models = ["claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"];
    let model = models[n % 3];
    let start = DAY0 + (n as u64 * 7919) % (30 * 86_400);
    let mut k = 0u64;
    while out.len() < bytes {
        let t = stamp(start + k * 37);
        writeln!(
            out,
            r#"{{"type":"user","sessionId":"{sid}","uuid":"u-{n}-{k}","cwd":"/home/u/src/p{}","timestamp":"{t}","message":{{"role":"user","content":"step {k}: go on"}}}}"#,
            n % 40
        )
        .unwrap();
        let text: String =
            (0..r.range(200, 1600)).map(|i| if i % 7 == 6 { ' ' } else { (b'a' + (i % 26) as u8) as char }).collect();
        let (input, output, read, write) = (r.range(1, 50), r.range(1, 3000), r.range(1000, 90_000), r.range(0, 5000));
        for (b, out_so_far) in [(0, 1), (1, output)] {
            writeln!(
                out,
                r#"{{"type":"assistant","sessionId":"{sid}","uuid":"a-{n}-{k}-{b}","requestId":"req_{n}_{k}","cwd":"/home/u/src/p{}","timestamp":"{t}","message":{{"id":"msg_{n}_{k}","role":"assistant","model":"{model}","content":[{{"type":"text","text":"{text}"}}],"usage":{{"input_tokens":{input},"output_tokens":{out_so_far},"cache_creation_input_tokens":{write},"cache_read_input_tokens":{read}}}}}}}"#,
                n % 40
            )
            .unwrap();
        }
        k += 1;
    }
}

fn stamp(t: u64) -> String {
    let (day, secs) = ((t / 86_400) as i64, t % 86_400);
    let (y, m, d) = nineagents::localtime::civil_from_days(day);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.000Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

/// The home; its bytes.
fn world(opts: &Opts, s: &Scratch) -> io::Result<u64> {
    let home = s.dir.join("home");
    let mut r = gen_rollout::Rng::new(0x0b5e_55ed);
    let (mut bytes, mut buf, mut first) = (0u64, Vec::new(), Vec::new());
    for i in 0..opts.claude {
        let dir = home.join(format!(".claude/projects/-home-u-src-p{:03}", i / PER_PROJECT));
        if i % PER_PROJECT == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        let sid = format!("{:08x}-0000-4000-8000-{:012x}", i, i);
        buf.clear();
        claude_transcript(i, &sid, size_of(i, &mut r), &mut buf);
        std::fs::write(dir.join(format!("{sid}.jsonl")), &buf)?;
        bytes += buf.len() as u64;
        if i == 0 {
            first = buf.clone();
        }
    }
    // A resumed session: the first one's history copied, then its own.
    let sid = "ffffffff-0000-4000-8000-00000000ffff";
    let mut resumed = first;
    claude_transcript(opts.claude + 1, sid, resumed.len() + 100_000, &mut resumed);
    let dir = home.join(".claude/projects/-home-u-src-p000");
    std::fs::write(dir.join(format!("{sid}.jsonl")), &resumed)?;
    bytes += resumed.len() as u64;
    for i in 0..opts.codex {
        let day = home.join(format!(".codex/sessions/2026/11/{:02}", 1 + i % 28));
        std::fs::create_dir_all(&day)?;
        let own = format!("019cad1a-0000-7000-8000-{i:012x}");
        buf.clear();
        codex_rollout(i, &own, opts.codex_bytes as usize, &mut buf);
        std::fs::write(day.join(format!("rollout-2026-11-{:02}T08-00-00-{own}.jsonl", 1 + i % 28)), &buf)?;
        bytes += buf.len() as u64;
    }
    Ok(bytes)
}

/// A codex rollout of about `bytes`, thread `id`, as codex 0.17x writes
/// one: its `session_meta`, a `turn_context`, then turns of a prompt, a
/// reply and a `token_count` whose running total grows by the turn's
/// `last_token_usage` (its cached input within its input).
fn codex_rollout(n: usize, id: &str, bytes: usize, out: &mut Vec<u8>) {
    let mut r = gen_rollout::Rng::new(0xc0de_0000 ^ n as u64);
    let start = DAY0 + (n as u64 * 6133) % (30 * 86_400);
    let t0 = stamp(start);
    writeln!(
        out,
        r#"{{"timestamp":"{t0}","type":"session_meta","payload":{{"id":"{id}","timestamp":"{t0}","cwd":"/home/u/src/c{}","originator":"codex_cli_rs","cli_version":"0.170.0"}}}}"#,
        n % 10
    )
    .unwrap();
    writeln!(
        out,
        r#"{{"timestamp":"{t0}","type":"turn_context","payload":{{"cwd":"/home/u/src/c","model":"gpt-5-codex"}}}}"#
    )
    .unwrap();
    let mut total = [0u64; 4];
    let mut k = 0u64;
    while out.len() < bytes {
        let t = stamp(start + k * 41);
        let text: String =
            (0..r.range(200, 1600)).map(|i| if i % 7 == 6 { ' ' } else { (b'a' + (i % 26) as u8) as char }).collect();
        writeln!(out, r#"{{"timestamp":"{t}","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"step {k}"}}]}}}}"#).unwrap();
        writeln!(out, r#"{{"timestamp":"{t}","type":"response_item","payload":{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"{text}"}}]}}}}"#).unwrap();
        let input = r.range(2000, 60_000);
        let last = [input, input * 4 / 5, r.range(10, 4000), r.range(0, 1000)].map(|v| v as u64);
        for (a, b) in total.iter_mut().zip(last) {
            *a += b;
        }
        let usage = |u: [u64; 4]| {
            format!(
                r#"{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{},"reasoning_output_tokens":{},"total_tokens":{}}}"#,
                u[0],
                u[1],
                u[2],
                u[3],
                u[0] + u[2]
            )
        };
        writeln!(
            out,
            r#"{{"timestamp":"{t}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{},"last_token_usage":{},"model_context_window":258400}}}}}}"#,
            usage(total),
            usage(last)
        )
        .unwrap();
        k += 1;
    }
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
    let bytes = world(opts, &s)?;
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
