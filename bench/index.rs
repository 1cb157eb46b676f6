//! `cargo bench --bench index -- [options]`: how fast the chat indexer
//! reads a codex rollout, against two baselines, in one run.
//!
//! The rollout is the ~228 MB synthetic one `bench/gen_rollout.rs` writes
//! (generated on first use under `target/bench-data/`, reused after). The
//! whole file is read into memory first, so every measurement reads the
//! same bytes from RAM, as the daemon reads a transcript from page cache.
//! Then, best of `--runs` each:
//!
//! - **indexer, windows**: `chat::Index::new(Format::Codex, 1 << 24)` fed
//!   the file in windows of `--window` bytes (1 MiB by default, what the
//!   server reads through its ring), each next window starting where the
//!   last complete line ended: the daemon's loop without the I/O.
//! - **indexer, one feed**: the same, the whole file in one `feed`.
//! - **indexer, windows, avx2**: on a CPU whose best path is AVX-512, the
//!   windows again with the AVX2 classifier (`Index::with_scan_path`), so
//!   one run measures both paths the target holds for.
//! - **memchr2 walk**: the seed's method for the strings, which hold most
//!   of the bytes: `memchr2('"', '\\')` hopping, a backslash skipping the
//!   byte after it, a quote opening or closing a string; it counts strings.
//!   This is the floor the issue sets the target against.
//! - **memchr quote walk**: the seed's `strEnd` exactly: `memchr('"')`,
//!   then the run of backslashes before the quote decides whether it
//!   closes. Faster than memchr2 on escape-heavy text; shown for context.
//! - **serde_json::Value per line**: what a user would write.
//!
//! It prints GB/s (10^9 bytes per second) for each, the indexer's ratios,
//! and whether the target is met: **≥ 4.5 GB/s and ≥ 2.4× the
//! memchr2 walk**, for the windowed indexer. See bench/README.md.

#[path = "gen_rollout.rs"]
mod gen_rollout;
mod harness;

use std::hint::black_box;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use nineagents::chat::{Format, Index, Kind};

const USAGE: &str = "\
usage: cargo bench --bench index -- [--file PATH] [--runs N] [--window BYTES]
                                    [--max-messages N] [--no-serde] [--check]

  --file PATH        index this codex rollout instead of the generated one
  --runs N           best of N for every measurement (default 5)
  --window BYTES     bytes per feed, as the server reads them (default 1048576)
  --max-messages N   the index's cap (default 16777216)
  --no-serde         skip the serde_json baseline (the slow one)
  --check            exit 1 when the target is not met
";

/// The target for the windowed indexer.
const TARGET_GBPS: f64 = 4.5;
const TARGET_RATIO: f64 = 2.4;

struct Opts {
    file: Option<PathBuf>,
    runs: usize,
    window: usize,
    max_messages: usize,
    serde: bool,
    check: bool,
}

fn main() -> ExitCode {
    harness::main("index", USAGE, parse, run)
}

fn parse(mut p: pico_args::Arguments) -> Result<Opts, String> {
    let e = |e: pico_args::Error| e.to_string();
    let opts = Opts {
        file: p.opt_value_from_str("--file").map_err(e)?,
        runs: p.opt_value_from_str("--runs").map_err(e)?.unwrap_or(5),
        window: p.opt_value_from_str("--window").map_err(e)?.unwrap_or(1 << 20),
        max_messages: p.opt_value_from_str("--max-messages").map_err(e)?.unwrap_or(1 << 24),
        serde: !p.contains("--no-serde"),
        check: p.contains("--check"),
    };
    harness::finish(p)?;
    if opts.runs == 0 || opts.runs > 1000 {
        return Err(format!("--runs {}: expected 1..=1000", opts.runs));
    }
    if opts.window < 4096 {
        return Err("--window must be at least 4096".into());
    }
    Ok(opts)
}

/// One measurement: a closure that does the whole job once and returns
/// what it counted, which must be the same every run.
struct Measure<'a> {
    f: Box<dyn FnMut() -> u64 + 'a>,
    best: f64,
    counted: Option<u64>,
}

impl<'a> Measure<'a> {
    fn new(f: impl FnMut() -> u64 + 'a) -> Measure<'a> {
        Measure { f: Box::new(f), best: f64::INFINITY, counted: None }
    }
}

/// Runs every measurement once per round, `runs` rounds, keeping each
/// one's fastest. Interleaved rather than one after the other, so that a
/// machine busy for a while (a compile) slows all of them alike and the
/// ratios stay fair.
fn best_of(runs: usize, ms: &mut [(&str, Measure<'_>)]) -> Result<(), String> {
    for _ in 0..runs {
        for (name, m) in ms.iter_mut() {
            let t0 = Instant::now();
            let n = black_box((m.f)());
            let secs = t0.elapsed().as_secs_f64();
            m.best = m.best.min(secs);
            match m.counted {
                None => m.counted = Some(n),
                Some(c) if c != n => return Err(format!("{name}: runs disagree: {c} then {n}")),
                _ => {}
            }
        }
    }
    Ok(())
}

fn run(opts: &Opts) -> Result<bool, String> {
    let (path, written) = match &opts.file {
        Some(p) => (p.clone(), None),
        None => {
            let path = gen_rollout::default_path(gen_rollout::SEED, gen_rollout::TARGET_BYTES);
            let s = gen_rollout::ensure(&path, gen_rollout::SEED, gen_rollout::TARGET_BYTES, false)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            gen_rollout::report(&s);
            (path, Some(conversation_records(&s.records)))
        }
    };
    let data = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let len = data.len();
    let gb = len as f64 / 1e9;
    let backslashes = memchr::memchr_iter(b'\\', &data).count();
    let lines = memchr::memchr_iter(b'\n', &data).count();

    println!(
        "index: {} ({:.1} MB, {} lines, backslashes {:.2}% of bytes), in memory, best of {}",
        path.display(),
        len as f64 / 1e6,
        lines,
        backslashes as f64 * 100.0 / len as f64,
        opts.runs
    );
    harness::print_cpu_and_load("unknown (no model name in /proc/cpuinfo)");
    println!("  indexer SIMD: {}", simd_path());

    // A first pass, unmeasured: the indexer must cover the whole file,
    // and the two walks must agree on the strings.
    let (covered, full) = {
        let mut idx = Index::new(Format::Codex, opts.max_messages);
        idx.feed(0, &data);
        let mut kinds = [0usize; Kind::ALL.len()];
        for id in 0..idx.len() {
            if let Some(info) = idx.info(id) {
                kinds[info.kind as usize] += 1;
            }
        }
        let by_kind: Vec<String> =
            Kind::ALL.iter().zip(kinds).filter(|(_, n)| *n > 0).map(|(k, n)| format!("{} {n}", k.label())).collect();
        println!("  messages indexed: {} ({})", idx.len(), by_kind.join(", "));
        if let Some(n) = written {
            let same = if n == idx.len() as u64 { "the same" } else { "DIFFERENT: see docs/CHAT.md for what counts" };
            println!("  conversation records the generator wrote: {n} ({same})");
        }
        (idx.covered(), idx.full())
    };
    if full {
        println!("  WARNING: the index filled up (--max-messages {}); the rest was not indexed", opts.max_messages);
    } else if covered != len as u64 {
        println!("  WARNING: the indexer covered {covered} of {len} bytes (a last line without its newline?)");
    }
    let (s2, s1) = (memchr2_walk(&data), memchr_quote_walk(&data));
    if s1 != s2 {
        return Err(format!("the walks disagree: memchr2 {s2} strings, memchr {s1}"));
    }
    println!();

    // AVX-512 picked and AVX2 there too: the AVX2 path is measured as well.
    let avx2_second = simd_path() == "avx512" && nineagents::chat::scan_paths().contains(&"avx2");
    let grown = std::cell::Cell::new(0u64);
    let bad = std::cell::Cell::new(0u64);
    let d = &data[..];
    let mut ms = vec![
        // (a) The indexer, fed in the server's windows and in one feed.
        (
            "indexer, windows",
            Measure::new(|| {
                let (msgs, g) = index_windows(d, opts.window, opts.max_messages);
                grown.set(g);
                msgs as u64
            }),
        ),
        (
            "indexer, one feed",
            Measure::new(|| {
                let mut idx = Index::new(Format::Codex, opts.max_messages);
                idx.feed(0, black_box(d));
                idx.len() as u64
            }),
        ),
        // (a') The windows again with the AVX2 classifier, where the CPU
        // picked AVX-512: the target holds for both.
        (
            "indexer, windows, avx2",
            Measure::new(|| {
                let Some(idx) = avx2_second.then(|| Index::with_scan_path(Format::Codex, opts.max_messages, "avx2"))
                else {
                    return 0;
                };
                idx.map_or(0, |idx| index_windows_with(d, opts.window, idx).0 as u64)
            }),
        ),
        // (b) The memchr walks.
        ("memchr2 walk", Measure::new(|| memchr2_walk(black_box(d)))),
        ("memchr quote walk", Measure::new(|| memchr_quote_walk(black_box(d)))),
    ];
    if opts.serde {
        // (c) serde_json, line by line.
        ms.push((
            "serde_json",
            Measure::new(|| {
                let (ok, b) = serde_lines(black_box(d));
                bad.set(b);
                ok
            }),
        ));
    }
    best_of(opts.runs, &mut ms)?;
    let get = |i: usize| (ms[i].1.best, ms[i].1.counted.unwrap_or(0));
    let ((win_secs, win_msgs), (one_secs, one_msgs)) = (get(0), get(1));
    let (avx2_secs, avx2_msgs) = get(2);
    let ((m2_secs, m2_strings), (m1_secs, m1_strings)) = (get(3), get(4));
    let serde = opts.serde.then(|| (get(5), bad.get()));
    if avx2_second && avx2_msgs != win_msgs {
        return Err(format!("the AVX2 classifier found {avx2_msgs} messages, AVX-512 {win_msgs}"));
    }
    let grown = grown.get();
    if win_msgs != one_msgs {
        return Err(format!("windowed feeding found {win_msgs} messages, one feed {one_msgs}"));
    }

    let gbps = |secs: f64| gb / secs;
    let window_label = format!("indexer, {} windows", size_label(opts.window));
    println!("  {:<34} {:>8} {:>10}   counted", "measure", "GB/s", "best ms");
    println!("  {:<34} {:>8.2} {:>10.1}   {} messages", window_label, gbps(win_secs), win_secs * 1e3, win_msgs);
    println!("  {:<34} {:>8.2} {:>10.1}   {} messages", "indexer, one feed", gbps(one_secs), one_secs * 1e3, one_msgs);
    if avx2_second {
        let label = format!("{window_label}, avx2");
        println!("  {:<34} {:>8.2} {:>10.1}   {} messages", label, gbps(avx2_secs), avx2_secs * 1e3, avx2_msgs);
    }
    println!(
        "  {:<34} {:>8.2} {:>10.1}   {} strings",
        "memchr2 walk (the floor)",
        gbps(m2_secs),
        m2_secs * 1e3,
        m2_strings
    );
    println!(
        "  {:<34} {:>8.2} {:>10.1}   {} strings",
        "memchr quote walk (seed strEnd)",
        gbps(m1_secs),
        m1_secs * 1e3,
        m1_strings
    );
    if let Some(((s_secs, s_ok), bad)) = serde {
        let note = if bad > 0 { format!(", {bad} failed to parse") } else { String::new() };
        println!(
            "  {:<34} {:>8.2} {:>10.1}   {} lines{}",
            "serde_json::Value per line",
            gbps(s_secs),
            s_secs * 1e3,
            s_ok,
            note
        );
    }
    if grown > 0 {
        println!("  (a line longer than the window: the window was doubled {grown} times)");
    }
    println!();

    let ratio_m2 = m2_secs / win_secs;
    let ratio_m1 = m1_secs / win_secs;
    println!("  indexer / memchr2 walk      {:>6.2}x", ratio_m2);
    println!("  indexer / memchr quote walk {:>6.2}x", ratio_m1);
    if let Some(((s_secs, _), _)) = serde {
        println!("  indexer / serde_json        {:>6.1}x", s_secs / win_secs);
    }
    if avx2_second {
        println!("  indexer (avx2) / memchr2 walk {:>4.2}x", m2_secs / avx2_secs);
    }
    let speed_ok = gbps(win_secs) >= TARGET_GBPS;
    let ratio_ok = ratio_m2 >= TARGET_RATIO && (!avx2_second || m2_secs / avx2_secs >= TARGET_RATIO);
    let met = speed_ok && ratio_ok;
    let avx2_note = if avx2_second { format!(", avx2 {:.2}x", m2_secs / avx2_secs) } else { String::new() };
    println!(
        "  target (>= {TARGET_GBPS} GB/s and >= {TARGET_RATIO}x memchr2, windowed, every SIMD path): {} ({:.2} GB/s {}, {:.2}x{avx2_note} {})",
        if met { "MET" } else { "NOT MET" },
        gbps(win_secs),
        if speed_ok { "ok" } else { "short" },
        ratio_m2,
        if ratio_ok { "ok" } else { "short" },
    );
    let strict = ratio_m1 >= TARGET_RATIO;
    println!(
        "  stricter reading (>= {TARGET_RATIO}x the memchr quote walk, the seed's strEnd): {} ({:.2}x)",
        if strict { "met" } else { "not met" },
        ratio_m1
    );
    Ok(met || !opts.check)
}

/// The records of the generated rollout that carry conversation, by the
/// generator's own count: `response_item` messages, calls and their
/// outputs, and reasoning with a summary (one `agent_reasoning` copy
/// each). The `event_msg` copies and the bookkeeping are not messages.
fn conversation_records(records: &[(String, u64)]) -> u64 {
    records
        .iter()
        .filter(|(k, _)| {
            (k.starts_with("response_item/") && k != "response_item/reasoning") || k == "event_msg/agent_reasoning"
        })
        .map(|(_, n)| n)
        .sum()
}

/// `harness::index_in_windows` on a codex index of `max_messages`: the
/// messages, and how often the window grew.
fn index_windows(data: &[u8], window: usize, max_messages: usize) -> (usize, u64) {
    index_windows_with(data, window, Index::new(Format::Codex, max_messages))
}

/// `index_windows` with a given (empty) index.
fn index_windows_with(data: &[u8], window: usize, idx: Index) -> (usize, u64) {
    let (idx, grown) = harness::index_in_windows(data, window, idx);
    (idx.len(), grown)
}

/// The seed's way through strings, as the issue names it: hop with
/// `memchr2` to the next quote or backslash; a backslash escapes the byte
/// after it (valid JSON has none outside strings), a quote opens or closes
/// a string. Counts the strings closed.
fn memchr2_walk(data: &[u8]) -> u64 {
    let (mut at, mut in_string, mut strings) = (0usize, false, 0u64);
    while let Some(i) = memchr::memchr2(b'"', b'\\', &data[at..]) {
        let p = at + i;
        if data[p] == b'\\' {
            at = p + 2;
            if at >= data.len() {
                break;
            }
            continue;
        }
        strings += in_string as u64;
        in_string = !in_string;
        at = p + 1;
    }
    strings
}

/// The seed's `strEnd` as written: hop with `memchr` to the next quote;
/// inside a string it closes it when the run of backslashes before it is
/// even. Counts the strings closed.
fn memchr_quote_walk(data: &[u8]) -> u64 {
    let (mut at, mut in_string, mut strings) = (0usize, false, 0u64);
    while let Some(i) = memchr::memchr(b'"', &data[at..]) {
        let p = at + i;
        at = p + 1;
        if !in_string {
            in_string = true;
            continue;
        }
        let mut k = p;
        while data[k - 1] == b'\\' {
            k -= 1;
        }
        if (p - k) % 2 == 0 {
            in_string = false;
            strings += 1;
        }
    }
    strings
}

/// `serde_json::Value` of every line: lines parsed, and lines that failed.
fn serde_lines(data: &[u8]) -> (u64, u64) {
    let (mut ok, mut bad, mut start) = (0u64, 0u64, 0usize);
    for nl in memchr::memchr_iter(b'\n', data).chain(std::iter::once(data.len())) {
        let line = &data[start..nl];
        start = nl + 1;
        if line.is_empty() {
            continue;
        }
        match serde_json::from_slice::<serde_json::Value>(line) {
            Ok(v) => {
                black_box(&v);
                ok += 1;
            }
            Err(_) => bad += 1,
        }
    }
    (ok, bad)
}

fn size_label(n: usize) -> String {
    if n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

/// The SIMD path the indexer picked on this CPU, as the crate names it.
fn simd_path() -> String {
    nineagents::chat::scan_path().to_string()
}
