//! `cargo bench --bench load -- [options]`: a load generator for 9agents.
//!
//! N connections, one thread each, each a blocking Unix stream speaking raw
//! `nineagents::proto`: Tversion, Tattach, then for a fixed duration the
//! cycle walk(newfid) + open + read (the whole file) + clunk, one message
//! in flight at a time. One *op* is one such cycle. It prints ops/s,
//! messages/s and the p50/p99 latency of a cycle, as one summary line and
//! a short table.
//!
//! `--baseline` also measures the protocol floor in the same run: the same
//! connections sending the cheapest request there is, Tclunk of a fid that
//! does not exist (answered Rerror), one round trip at a time. The ratio
//! ops/s ÷ floor says how many floor round trips one cycle costs.
//!
//! `--fids N` is another mode: one connection clones the root fid N times
//! (Twalk with no names, newfid 1..=N) and reports the daemon's RSS before
//! and after, and the bytes per live fid.
//!
//! By default (`--spawn`) the bench starts the release daemon itself, as
//! harness.rs's `Daemon` does (`--no-post --unix <scratch>/d0.sock`, a
//! scratch `HOME` and `XDG_RUNTIME_DIR`), and stops it with SIGTERM at the
//! end. `--addr unix!/path` measures a
//! daemon that is already running instead. Only Unix sockets are dialed.
//! See bench/README.md.

use std::io;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use harness::{Cpu, Daemon, Mem, Scratch};
use nineagents::client::{Client, Config, Conn, ServerError};
use nineagents::proto::{self, Dialect, Rmsg, Tmsg, WalkNames, NOFID, OREAD};

mod harness;

const USAGE: &str = "\
usage: cargo bench --bench load -- [--spawn | --addr unix!/path] [--conns N] [--secs S]
                                   [--warmup S] [--path /README] [--msize BYTES]
                                   [--baseline] [--fids N] [--bin PATH]

  --spawn          start target/release/9agents in a scratch XDG_RUNTIME_DIR (default)
  --addr ADDR      dial a running daemon instead (unix!/path only)
  --conns N        connections, one thread each (default 8)
  --secs S         measured duration in seconds (default 5)
  --warmup S       unmeasured run before it (default 0.5)
  --path P         the file each cycle walks to, opens, reads and clunks (default /README)
  --msize BYTES    msize asked in Tversion (default 1048576)
  --baseline       also measure the floor: Tclunk of an unknown fid, answered Rerror
  --fids N         instead: clone N fids on one connection, report daemon RSS per fid
  --bin PATH       the daemon to spawn (default target/release/9agents)
";

/// How long any one reply may take before the bench gives up.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// The fid every connection attaches as root; cycles walk to `CYCLE_FID`.
const ROOT_FID: u32 = 0;
const CYCLE_FID: u32 = 1;
/// A fid no connection ever makes: the floor clunks it.
const UNKNOWN_FID: u32 = 0x7EAD_BEEF;

struct Opts {
    addr: Option<PathBuf>,
    conns: usize,
    secs: f64,
    warmup: f64,
    path: String,
    msize: u32,
    baseline: bool,
    fids: Option<u32>,
    bin: Option<PathBuf>,
}

fn main() -> ExitCode {
    harness::main("load", USAGE, parse, run)
}

fn parse(mut p: pico_args::Arguments) -> Result<Opts, String> {
    let e = |e: pico_args::Error| e.to_string();
    let spawn = p.contains("--spawn");
    let addr: Option<String> = p.opt_value_from_str("--addr").map_err(e)?;
    let opts = Opts {
        addr: match addr {
            None => None,
            Some(a) => {
                Some(PathBuf::from(a.strip_prefix("unix!").ok_or(format!("--addr {a}: only unix!/path is supported"))?))
            }
        },
        conns: p.opt_value_from_str("--conns").map_err(e)?.unwrap_or(8),
        secs: p.opt_value_from_str("--secs").map_err(e)?.unwrap_or(5.0),
        warmup: p.opt_value_from_str("--warmup").map_err(e)?.unwrap_or(0.5),
        path: p.opt_value_from_str("--path").map_err(e)?.unwrap_or_else(|| "/README".into()),
        msize: p.opt_value_from_str("--msize").map_err(e)?.unwrap_or(1 << 20),
        baseline: p.contains("--baseline"),
        fids: p.opt_value_from_str("--fids").map_err(e)?,
        bin: p.opt_value_from_str("--bin").map_err(e)?,
    };
    harness::finish(p)?;
    if spawn && opts.addr.is_some() {
        return Err("--spawn and --addr are exclusive".into());
    }
    if opts.conns == 0 || opts.conns > 1024 {
        return Err(format!("--conns {}: expected 1..=1024", opts.conns));
    }
    let (secs_ok, warmup_ok) =
        ((0.0..=3600.0).contains(&opts.secs) && opts.secs > 0.0, (0.0..=600.0).contains(&opts.warmup));
    if !(secs_ok && warmup_ok) {
        return Err("--secs must be in (0, 3600], --warmup in [0, 600]".into());
    }
    if opts.msize < 4096 {
        return Err("--msize must be at least 4096".into());
    }
    if names_of(&opts.path).len() > proto::MAXWELEM {
        return Err(format!("--path {}: more than {} names", opts.path, proto::MAXWELEM));
    }
    Ok(opts)
}

fn run(opts: &Opts) -> io::Result<()> {
    let scratch = match &opts.addr {
        Some(_) => None,
        None => Some(Scratch::new("load")?),
    };
    let daemon = match &scratch {
        Some(s) => Some(spawn(opts, s)?),
        None => None,
    };
    let sock = match (&opts.addr, &daemon) {
        (Some(a), _) => a.clone(),
        (None, Some(d)) => d.sock.clone(),
        (None, None) => unreachable!(),
    };
    let result = match opts.fids {
        Some(n) => fids_mode(opts, &sock, daemon.as_ref().map(|d| d.pid), n),
        None => load_mode(opts, &sock, daemon.as_ref().map(|d| d.pid)),
    };
    let stopped = match daemon {
        Some(d) => d.stop(),
        None => Ok(()),
    };
    result.and(stopped)
}

// ---------------------------------------------------------------------------
// The load: N connections cycling walk+open+read+clunk.

fn load_mode(opts: &Opts, sock: &Path, pid: Option<u32>) -> io::Result<()> {
    // The daemon's CPU time tells whether it or the client was the limit;
    // a daemon we did not start tells us its pid in /pid.
    let pid = match pid {
        Some(p) => Some(p),
        None => daemon_pid(&mut Session::open(sock, opts.msize)?).ok(),
    };
    let names = names_of(&opts.path);
    let cycle = measure(opts, sock, pid, Work::Cycle(names))?;
    let floor = if opts.baseline { Some(measure(opts, sock, pid, Work::Floor)?) } else { None };

    let ops_s = cycle.ops as f64 / cycle.secs;
    let msgs_s = cycle.msgs as f64 / cycle.secs;
    let h = &cycle.hist;
    let us = |q: f64| h.quantile(q) as f64 / 1e3;
    let mut line = format!(
        "load: {} conns, {:.2}s, {}: {:.0} ops/s, {:.0} msgs/s, cycle p50 {:.1}us p99 {:.1}us",
        opts.conns,
        cycle.secs,
        opts.path,
        ops_s,
        msgs_s,
        us(0.50),
        us(0.99)
    );
    if let Some(f) = &floor {
        let floor_s = f.ops as f64 / f.secs;
        line += &format!("; floor {:.0} rt/s, ops/s / floor = {:.3}", floor_s, ops_s / floor_s);
    }
    println!("{line}");
    println!();
    println!("  {:<30} {:>14}", "measure", "value");
    println!("  {:<30} {:>14}", "connections", opts.conns);
    println!("  {:<30} {:>14.2}", "measured seconds", cycle.secs);
    println!("  {:<30} {:>14}", "cycles (ops)", cycle.ops);
    println!("  {:<30} {:>14.1}", "messages per op", cycle.msgs as f64 / cycle.ops.max(1) as f64);
    println!("  {:<30} {:>14}", "file bytes per op", cycle.file_len);
    println!("  {:<30} {:>14.0}", "ops/s", ops_s);
    println!("  {:<30} {:>14.0}", "messages/s", msgs_s);
    println!("  {:<30} {:>14.1}", "file MB/s", (cycle.ops * cycle.file_len) as f64 / cycle.secs / 1e6);
    for (name, q) in
        [("cycle p50 (us)", 0.50), ("cycle p90 (us)", 0.90), ("cycle p99 (us)", 0.99), ("cycle p99.9 (us)", 0.999)]
    {
        println!("  {:<30} {:>14.1}", name, us(q));
    }
    println!("  {:<30} {:>14.1}", "cycle max (us)", h.max as f64 / 1e3);
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("  {:<30} {:>14}", "CPUs available", cpus);
    if let Some(c) = cycle.daemon_cpu {
        println!("  {:<30} {:>14.0}", "daemon CPU (% of one core)", c * 100.0);
    }
    println!("  {:<30} {:>14.0}", "bench CPU (% of one core)", cycle.bench_cpu * 100.0);
    if let Some(f) = &floor {
        let floor_s = f.ops as f64 / f.secs;
        println!("  {:<30} {:>14.0}", "floor round trips/s", floor_s);
        println!("  {:<30} {:>14.1}", "floor p50 (us)", f.hist.quantile(0.50) as f64 / 1e3);
        println!("  {:<30} {:>14.1}", "floor p99 (us)", f.hist.quantile(0.99) as f64 / 1e3);
        if let Some(c) = f.daemon_cpu {
            println!("  {:<30} {:>14.0}", "floor daemon CPU (% of a core)", c * 100.0);
        }
        println!("  {:<30} {:>14.3}", "ops/s / floor", ops_s / floor_s);
        println!("  {:<30} {:>14.3}", "messages/s / floor", msgs_s / floor_s);
    }
    Ok(())
}

#[derive(Clone)]
enum Work {
    /// walk(newfid) + open + read to the end + clunk of these names.
    Cycle(Vec<Vec<u8>>),
    /// Tclunk of an unknown fid, answered Rerror: one round trip.
    Floor,
}

struct Tally {
    ops: u64,
    msgs: u64,
    file_len: u64,
    secs: f64,
    hist: Hist,
    /// The daemon's CPU time over the measured window, per second of it.
    daemon_cpu: Option<f64>,
    /// This process's (the client threads') CPU time, likewise.
    bench_cpu: f64,
}

/// Connect every connection, let them all start together, run the warmup
/// then the measured window, and add up what the threads counted.
fn measure(opts: &Opts, sock: &Path, pid: Option<u32>, work: Work) -> io::Result<Tally> {
    // Every thread connects, negotiates and checks one cycle before the
    // barrier; the main thread then takes the start time for everyone.
    let start = Arc::new(Barrier::new(opts.conns + 1));
    let warmup = Duration::from_secs_f64(opts.warmup);
    let secs = Duration::from_secs_f64(opts.secs);
    let mut threads = Vec::with_capacity(opts.conns);
    for _ in 0..opts.conns {
        let (start, work, sock, msize) = (start.clone(), work.clone(), sock.to_path_buf(), opts.msize);
        threads.push(std::thread::spawn(move || -> io::Result<(u64, u64, u64, Hist)> {
            // A thread that fails before the barrier must still reach it, or
            // everyone waits forever; it reports its error after.
            let setup = Session::open(&sock, msize).and_then(|mut s| {
                let len = s.one(&work)?;
                Ok((s, len))
            });
            start.wait();
            let (mut s, file_len) = setup?;
            let t0 = Instant::now();
            let (warm_end, end) = (t0 + warmup, t0 + warmup + secs);
            let mut now = t0;
            while now < warm_end {
                s.one(&work)?;
                now = Instant::now();
            }
            let (mut ops, msgs0, mut hist) = (0u64, s.sent, Hist::new());
            while now < end {
                let before = now;
                let len = s.one(&work)?;
                if len != file_len {
                    return Err(bad(format!("read {len} bytes, the first cycle read {file_len}")));
                }
                now = Instant::now();
                hist.add((now - before).as_nanos() as u64);
                ops += 1;
            }
            Ok((ops, s.sent - msgs0, file_len, hist))
        }));
    }
    start.wait();
    let t0 = Instant::now();
    std::thread::sleep(warmup);
    let (cpu_t0, daemon0, bench0) = (Instant::now(), pid.and_then(cpu_secs), cpu_secs(std::process::id()));
    let mut total =
        Tally { ops: 0, msgs: 0, file_len: 0, secs: 0.0, hist: Hist::new(), daemon_cpu: None, bench_cpu: 0.0 };
    let mut first_err = None;
    for t in threads {
        match t.join().map_err(|_| bad("a connection thread panicked".into())).and_then(|r| r) {
            Ok((ops, msgs, file_len, hist)) => {
                total.ops += ops;
                total.msgs += msgs;
                total.file_len = file_len;
                total.hist.merge(&hist);
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let window = cpu_t0.elapsed().as_secs_f64();
    if let (Some(a), Some(b)) = (daemon0, pid.and_then(cpu_secs)) {
        total.daemon_cpu = Some((b - a) / window);
    }
    if let (Some(a), Some(b)) = (bench0, cpu_secs(std::process::id())) {
        total.bench_cpu = (b - a) / window;
    }
    // The window each thread measured is `secs` long, ending at its first
    // cycle past the deadline; wall time from the barrier minus the warmup
    // is that, plus the longest overrun.
    total.secs = (t0.elapsed().as_secs_f64() - opts.warmup).max(opts.secs);
    Ok(total)
}

// ---------------------------------------------------------------------------
// The fid mode: RSS per live fid.

fn fids_mode(opts: &Opts, sock: &Path, pid: Option<u32>, n: u32) -> io::Result<()> {
    if n == 0 || n >= NOFID - 1 {
        return Err(bad(format!("--fids {n}: expected 1..{}", NOFID - 1)));
    }
    let mut s = Session::open(sock, opts.msize)?;
    let pid = match pid {
        Some(p) => p,
        None => daemon_pid(&mut s)?,
    };
    let before = Mem::of(pid)?;
    let t0 = Instant::now();
    for newfid in 1..=n {
        s.walk(ROOT_FID, newfid, &[])?;
    }
    let took = t0.elapsed();
    // Let the loop finish whatever it does after the last reply.
    std::thread::sleep(Duration::from_millis(100));
    let after = Mem::of(pid)?;
    drop(s);
    std::thread::sleep(Duration::from_millis(200));
    let closed = Mem::of(pid)?;

    let grew_kib = after.rss_kib.saturating_sub(before.rss_kib);
    let per_fid = grew_kib as f64 * 1024.0 / n as f64;
    let at_100k_mib = per_fid * 100_000.0 / (1024.0 * 1024.0);
    let verdict = if at_100k_mib <= 32.0 { "within" } else { "OVER" };
    println!(
        "fids: {n} live fids on one connection: RSS {} -> {} KiB (+{} KiB), {:.0} bytes/fid; \
         100,000 fids ~ {:.1} MiB, {verdict} the 32 MiB target",
        before.rss_kib, after.rss_kib, grew_kib, per_fid, at_100k_mib
    );
    println!();
    println!("  {:<30} {:>14} {:>14}", "measure", "VmRSS KiB", "VmHWM KiB");
    println!("  {:<30} {:>14} {:>14}", "attached, no fids", before.rss_kib, before.hwm_kib);
    println!("  {:<30} {:>14} {:>14}", format!("{n} fids live"), after.rss_kib, after.hwm_kib);
    println!("  {:<30} {:>14} {:>14}", "connection closed", closed.rss_kib, closed.hwm_kib);
    println!("  {:<30} {:>14.0}", "bytes per fid", per_fid);
    println!("  {:<30} {:>14.0}", "walks/s (one at a time)", n as f64 / took.as_secs_f64());
    Ok(())
}

/// A daemon we did not start tells us its pid in /pid.
fn daemon_pid(s: &mut Session) -> io::Result<u32> {
    let text = s.read_file(&[b"pid".to_vec()])?;
    String::from_utf8_lossy(&text).trim().parse().map_err(|_| bad("/pid is not a number".into()))
}

/// User plus system CPU seconds of a process so far.
fn cpu_secs(pid: u32) -> Option<f64> {
    Cpu::of(pid).map(|c| c.secs)
}

// ---------------------------------------------------------------------------
// One 9P session over a blocking Unix stream, one request at a time.

/// A bench connection: the crate's own client (`nineagents::client`,
/// which the tests and the `9agents` subcommands use too), on a socket
/// with timeouts, counting the requests it sends.
struct Session {
    c: Client,
    /// T-messages sent on this session.
    sent: u64,
}

impl Session {
    /// Connect, Tversion (plain 9P2000 at `msize`), Tattach.
    fn open(sock: &Path, msize: u32) -> io::Result<Session> {
        let stream = UnixStream::connect(sock)
            .map_err(|e| io::Error::new(e.kind(), format!("connect {}: {e}", sock.display())))?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        let config = Config { dialect: Dialect::P2000, msize, uname: "bench".into(), aname: String::new() };
        let c = Client::handshake(Conn::Unix(stream), &config)?;
        if c.root() != ROOT_FID {
            return Err(bad(format!("the client attached as fid {}, not {ROOT_FID}", c.root())));
        }
        Ok(Session { c, sent: 2 })
    }

    /// One unit of work; for a cycle, the file's length.
    fn one(&mut self, work: &Work) -> io::Result<u64> {
        match work {
            Work::Cycle(names) => Ok(self.read_file(names)?.len() as u64),
            Work::Floor => match self.call(&Tmsg::Clunk { fid: UNKNOWN_FID }) {
                Err(e) if ServerError::of(&e).is_some() => Ok(0),
                Err(e) => Err(e),
                Ok(other) => Err(bad(format!("Tclunk of an unknown fid answered {}", show(&other)))),
            },
        }
    }

    /// walk(newfid) + open + read to the end + clunk; the file's bytes.
    ///
    /// The end is the first read that returns fewer bytes than asked (a
    /// read asks for a whole msize's worth, so a file under the msize is
    /// one Tread). Served files are snapshots of whole text, and every
    /// cycle's length is checked to be the first's.
    fn read_file(&mut self, names: &[Vec<u8>]) -> io::Result<Vec<u8>> {
        let names: Vec<&[u8]> = names.iter().map(|n| n.as_slice()).collect();
        self.walk(ROOT_FID, CYCLE_FID, &names)?;
        self.call(&Tmsg::Open { fid: CYCLE_FID, mode: OREAD })?;
        let count = self.c.io_max();
        let mut data = Vec::new();
        loop {
            let offset = data.len() as u64;
            match self.call(&Tmsg::Read { fid: CYCLE_FID, offset, count })? {
                Rmsg::Read { data: d } => {
                    let short = (d.len() as u32) < count;
                    data.extend_from_slice(d);
                    if short {
                        break;
                    }
                }
                other => return Err(bad(format!("Tread answered {}", show(&other)))),
            }
        }
        self.call(&Tmsg::Clunk { fid: CYCLE_FID })?;
        Ok(data)
    }

    fn walk(&mut self, fid: u32, newfid: u32, names: &[&[u8]]) -> io::Result<()> {
        let wn = WalkNames::new(names).ok_or_else(|| bad("too many names".into()))?;
        let text = names_text(names);
        match self.call(&Tmsg::Walk { fid, newfid, names: wn })? {
            Rmsg::Walk { qids } if qids.len() == names.len() => Ok(()),
            other => Err(bad(format!("Twalk {fid}->{newfid} {text:?} answered {}", show(&other)))),
        }
    }

    /// One round trip; an Rerror is the error (with the server's text).
    fn call(&mut self, msg: &Tmsg<'_>) -> io::Result<Rmsg<'_>> {
        self.sent += 1;
        self.c.call(msg)
    }
}

fn names_of(path: &str) -> Vec<Vec<u8>> {
    path.split('/').filter(|s| !s.is_empty()).map(|s| s.as_bytes().to_vec()).collect()
}

fn names_text(names: &[&[u8]]) -> Vec<String> {
    names.iter().map(|n| String::from_utf8_lossy(n).into_owned()).collect()
}

/// A reply as `-D` prints it (an Rerror's text readable).
fn show(r: &Rmsg<'_>) -> String {
    proto::trace_r(1, r).to_string()
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

// ---------------------------------------------------------------------------
// A latency histogram: log2 buckets split 64 ways (under 1.6% error),
// fixed size, so a long run costs no memory per sample.

const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;

struct Hist {
    counts: Vec<u64>,
    total: u64,
    max: u64,
}

impl Hist {
    fn new() -> Hist {
        Hist { counts: vec![0; 64 * SUB], total: 0, max: 0 }
    }

    fn index(v: u64) -> usize {
        if v < SUB as u64 {
            return v as usize;
        }
        let exp = 63 - v.leading_zeros(); // >= SUB_BITS
        let mantissa = (v >> (exp - SUB_BITS)) as usize & (SUB - 1);
        (exp - SUB_BITS + 1) as usize * SUB + mantissa
    }

    /// The lowest value that lands in bucket `i`.
    fn low(i: usize) -> u64 {
        if i < SUB {
            return i as u64;
        }
        let exp = (i / SUB) as u32 + SUB_BITS - 1;
        ((SUB + i % SUB) as u64) << (exp - SUB_BITS)
    }

    fn add(&mut self, v: u64) {
        self.counts[Self::index(v)] += 1;
        self.total += 1;
        self.max = self.max.max(v);
    }

    fn merge(&mut self, other: &Hist) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.max = self.max.max(other.max);
    }

    /// The value at quantile `q` (the bucket's midpoint), 0 when empty.
    fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = (Self::low(i), Self::low(i + 1));
                return ((lo + hi) / 2).min(self.max);
            }
        }
        self.max
    }
}

// ---------------------------------------------------------------------------
// The daemon under test, when the bench starts it.

/// Start `--bin` (by default the release build) in the scratch dir.
fn spawn(opts: &Opts, s: &Scratch) -> io::Result<Daemon> {
    let bin = match &opts.bin {
        Some(b) => b.clone(),
        None => release_binary()?,
    };
    let d = Daemon::spawn(&bin, s, &[] as &[&str])?;
    eprintln!("load: spawned {} (pid {}) on unix!{}", bin.display(), d.pid, d.sock.display());
    Ok(d)
}

/// `target/release/9agents` (or under `$CARGO_TARGET_DIR`), built with
/// `cargo build --release` first if it is not there.
fn release_binary() -> io::Result<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let target = if target.is_absolute() { target } else { root.join(target) };
    let bin = target.join("release/9agents");
    if !bin.exists() {
        eprintln!("load: {} is missing; running cargo build --release", bin.display());
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status =
            Command::new(cargo).args(["build", "--release", "--bin", "9agents"]).current_dir(&root).status()?;
        if !status.success() || !bin.exists() {
            return Err(bad(format!("cargo build --release failed ({status})")));
        }
    }
    Ok(bin)
}
