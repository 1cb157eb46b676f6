//! `cargo bench --bench search -- [options]`: searches through the daemon
//! over the generated home of the usage bench (`gen_home`), against
//! `rg -F -c TERM` over the same raw files, in one run (issue 23).
//!
//! For each of a rare term, a common one and a case-insensitive one: the
//! daemon's first search (the query written to `/search/query`, every
//! result read; its first result's delay after the write), another client
//! stat'ing `/README` meanwhile (p99), then the search again (`--again`
//! times, the fastest), and ripgrep over the home's transcripts, warm
//! (`--rg PATH`, else `rg` on `PATH`; skipped, saying how to install it,
//! when there is none: Debian's `ripgrep`). The daemon's RSS growth over
//! the searches. A bench prints; nothing here is a timed assertion.

#[path = "gen_home.rs"]
mod gen_home;
#[path = "gen_rollout.rs"]
mod gen_rollout;
mod harness;

use std::io;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use harness::{ms, print_table, quantile, sorted, Daemon, Row, Scratch};
use nineagents::client::Client;
use nineagents::proto::ORDWR;

const USAGE: &str = "\
usage: cargo bench --bench search -- [--claude 2000] [--codex 200] [--codex-bytes 1000000]
                                     [--again 3] [--rg PATH] [--bin PATH] [--home DIR]

--home DIR: the home is DIR, generated there when it has no .claude yet and
kept after the run (to profile, or to run again without writing 1.4 GB).
";

const MSIZE: u32 = 1 << 20;
const IO_TIMEOUT: Duration = Duration::from_secs(600);
/// Issue 23's targets.
const TARGET_FIRST: f64 = 2.0;
const TARGET_AGAIN: f64 = 1.0;
const TARGET_FIRST_RESULT: Duration = Duration::from_millis(50);
const TARGET_STAT_P99: Duration = Duration::from_millis(2);
const TARGET_RSS_GROWTH_MIB: u64 = 32;

/// The terms: (query, what rg is given, its flags).
const TERMS: [(&str, &str, &[&str]); 3] = [
    ("\"step 4242:\" max:100000", "step 4242:", &[]),
    ("\"go on\" max:100000", "go on", &[]),
    ("-i \"GO ON\" max:100000", "GO ON", &["-i"]),
];

struct Opts {
    claude: usize,
    codex: usize,
    codex_bytes: u64,
    again: usize,
    rg: PathBuf,
    bin: PathBuf,
    home: Option<PathBuf>,
}

fn main() -> ExitCode {
    let mut p = pico_args::Arguments::from_env();
    let _ = p.contains("--bench");
    let opts = match parse(p) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("search: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("search: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse(mut p: pico_args::Arguments) -> Result<Opts, String> {
    let e = |e: pico_args::Error| e.to_string();
    let opts = Opts {
        claude: p.opt_value_from_str("--claude").map_err(e)?.unwrap_or(2000),
        codex: p.opt_value_from_str("--codex").map_err(e)?.unwrap_or(200),
        codex_bytes: p.opt_value_from_str("--codex-bytes").map_err(e)?.unwrap_or(1_000_000),
        again: p.opt_value_from_str("--again").map_err(e)?.unwrap_or(3),
        rg: p.opt_value_from_str("--rg").map_err(e)?.unwrap_or_else(|| "rg".into()),
        bin: p.opt_value_from_str("--bin").map_err(e)?.unwrap_or_else(harness::default_bin),
        home: p.opt_value_from_str("--home").map_err(e)?,
    };
    let left = p.finish();
    if !left.is_empty() {
        return Err(format!("unknown arguments {left:?}"));
    }
    Ok(opts)
}

/// One search through `/search/query`: its results' bytes, the delay to
/// the first result after the write, and the whole time.
fn search(c: &mut Client, query: &str) -> io::Result<(u64, usize, Duration, Duration)> {
    let fid = c.walk("search/query")?;
    c.open(fid, ORDWR)?;
    let t = Instant::now();
    c.write(fid, 0, query.as_bytes())?;
    let mut buf = vec![0u8; c.io_max() as usize];
    let (mut bytes, mut lines, mut first, mut offset) = (0u64, 0usize, None, 0u64);
    loop {
        let n = c.read_at(fid, offset, &mut buf)?;
        if n == 0 {
            break;
        }
        first.get_or_insert(t.elapsed());
        bytes += n as u64;
        offset += n as u64;
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
    }
    let took = t.elapsed();
    c.clunk(fid)?;
    Ok((bytes, lines, first.unwrap_or(took), took))
}

/// `rg -F -c TERM` over the home: its wall time and the matching lines.
fn rg(bin: &PathBuf, home: &std::path::Path, term: &str, flags: &[&str]) -> Option<(Duration, u64)> {
    let t = Instant::now();
    let out = Command::new(bin)
        .args(["-F", "-c", "--no-filename", "--hidden"])
        .args(flags)
        .arg(term)
        .arg(home)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let took = t.elapsed();
    let n = String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim().parse::<u64>().ok()).sum();
    Some((took, n))
}

/// Bytes of the regular files under `dir`.
fn du(dir: &std::path::Path) -> io::Result<u64> {
    let mut n = 0;
    for e in std::fs::read_dir(dir)? {
        let (e, t) = {
            let e = e?;
            let t = e.file_type()?;
            (e, t)
        };
        if t.is_dir() {
            n += du(&e.path())?;
        } else if t.is_file() {
            n += e.metadata()?.len();
        }
    }
    Ok(n)
}

fn run(opts: &Opts) -> io::Result<()> {
    println!("search: {} on {}", opts.bin.display(), harness::machine());
    let s = Scratch::new("search")?;
    let home = s.dir.join("home");
    if let Some(dir) = &opts.home {
        // The daemon's HOME is the scratch one: it names the kept home.
        std::fs::create_dir_all(dir)?;
        std::fs::remove_dir(&home)?;
        std::os::unix::fs::symlink(std::fs::canonicalize(dir)?, &home)?;
    }
    let t = Instant::now();
    let kept = home.join(".claude").exists();
    let bytes = if kept { du(&home)? } else { gen_home::world(opts.claude, opts.codex, opts.codex_bytes, &home)? };
    println!(
        "search: scratch {}: {} claude sessions and a resumed one, {} codex rollouts, {:.2} GB, {} in {:.1} s",
        s.dir.display(),
        opts.claude,
        opts.codex,
        bytes as f64 / 1e9,
        if kept { "the --home kept from a run before, measured" } else { "written" },
        t.elapsed().as_secs_f64()
    );
    // Warm: the page cache holds the home for both tools.
    let have_rg = rg(&opts.rg, &home, "warm", &[]).is_some();
    let proc = s.fixture_proc()?;
    let d = Daemon::spawn(&opts.bin, &s, &[std::ffi::OsStr::new("--proc"), proc.as_os_str()])?;
    let mut c = harness::client(&d.sock, MSIZE, IO_TIMEOUT)?;
    let rss0 = harness::Mem::of(d.pid)?.rss_kib;
    let mut rows = Vec::new();
    for (i, (query, term, flags)) in TERMS.iter().enumerate() {
        let n = format!("{}", i + 1);
        let stats = harness::stat_client(harness::client(&d.sock, MSIZE, IO_TIMEOUT)?);
        let (bytes1, lines, first_result, first) = search(&mut c, query)?;
        let stat_times = sorted(&harness::stop_stats(stats)?);
        let mut again = Duration::MAX;
        for _ in 0..opts.again.max(1) {
            let (b, _, _, took) = search(&mut c, query)?;
            if b != bytes1 {
                return Err(io::Error::other("a search again differs, nothing changed"));
            }
            again = again.min(took);
        }
        rows.push(Row::new(
            &n,
            &format!("daemon: {query}"),
            format!("{lines} results, first {:.0} ms, again {:.0} ms", ms(first), ms(again)),
            "-",
            None,
        ));
        rows.push(Row::new(
            &n,
            "first result after the write",
            format!("{:.1} ms", ms(first_result)),
            "<= 50 ms",
            Some(first_result <= TARGET_FIRST_RESULT),
        ));
        rows.push(Row::new(
            &n,
            "other stat p99 / max",
            format!(
                "{:.3} / {:.3} ms (n {})",
                ms(quantile(&stat_times, 0.99)),
                ms(*stat_times.last().unwrap_or(&Duration::ZERO)),
                stat_times.len()
            ),
            "p99 <= 2 ms",
            Some(quantile(&stat_times, 0.99) <= TARGET_STAT_P99),
        ));
        if !have_rg {
            continue;
        }
        let Some((took, matched)) = rg(&opts.rg, &home, term, flags) else { continue };
        let (r1, r2) = (first.as_secs_f64() / took.as_secs_f64(), again.as_secs_f64() / took.as_secs_f64());
        rows.push(Row::new(
            &n,
            &format!("rg -F -c {} {term:?}", flags.join(" ")),
            format!("{:.0} ms, {matched} lines", ms(took)),
            "-",
            None,
        ));
        rows.push(Row::new(&n, "first search / rg", format!("{r1:.2}x"), "<= 2.0x", Some(r1 <= TARGET_FIRST)));
        rows.push(Row::new(&n, "again / rg", format!("{r2:.2}x"), "<= 1.0x", Some(r2 <= TARGET_AGAIN)));
    }
    if !have_rg {
        println!("search: no rg (apt install ripgrep, or --rg PATH): its rows skipped");
    }
    let rss = harness::Mem::of(d.pid)?;
    let growth = rss.hwm_kib.saturating_sub(rss0);
    rows.push(Row::new(
        "4",
        "daemon RSS growth (VmHWM - RSS at start)",
        format!("{:.1} MiB", growth as f64 / 1024.0),
        "<= 32 MiB",
        Some(growth <= TARGET_RSS_GROWTH_MIB * 1024),
    ));
    print_table(&rows);
    d.stop()
}
