//! What the benches share: the entry point (options, `--help`, exit
//! codes), a daemon started in a scratch world and read from outside
//! (memory, fds, CPU time, the SIGUSR1 status line), the table of figures
//! each bench ends with, and quantiles. A bench uses it as `mod harness;`
//! (this file is no bench of its own; every bench is its own crate).

#![allow(dead_code)] // each bench uses its own part of it

use std::ffi::OsStr;
use std::fmt::Display;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nineagents::chat::Index;
use nineagents::client::{Client, Config, Conn};
use nineagents::proto::Dialect;

/// How long a daemon may take to listen, or to exit on SIGTERM.
pub(crate) const SPAWN_DEADLINE: Duration = Duration::from_secs(10);
/// How long memory and fds have to settle.
pub(crate) const SETTLE_DEADLINE: Duration = Duration::from_secs(10);
pub(crate) const MIB: u64 = 1 << 20;

// ---------------------------------------------------------------------------
// The entry point.

/// A bench binary's `main`: `-h`/`--help` prints `usage` and exits 0; the
/// `--bench` flag cargo passes every bench binary is taken; `parse` reads
/// the rest (ending with [`finish`]), and an error there exits 2 after
/// `name: why` and the usage; then `run`, whose error exits 1 after
/// `name: why`.
pub(crate) fn main<O, R: Outcome, E: Display>(
    name: &str,
    usage: &str,
    parse: fn(pico_args::Arguments) -> Result<O, String>,
    run: fn(&O) -> Result<R, E>,
) -> ExitCode {
    let mut p = pico_args::Arguments::from_env();
    if p.contains(["-h", "--help"]) {
        print!("{usage}");
        return ExitCode::SUCCESS;
    }
    let _ = p.contains("--bench");
    let opts = match parse(p) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{name}: {e}\n{usage}");
            return ExitCode::from(2);
        }
    };
    match run(&opts) {
        Ok(r) => r.exit_code(),
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The end of a bench's options: an error naming any argument left over.
pub(crate) fn finish(p: pico_args::Arguments) -> Result<(), String> {
    let rest = p.finish();
    match rest.is_empty() {
        true => Ok(()),
        false => Err(format!("unexpected arguments: {rest:?}")),
    }
}

/// What a bench's run that did not fail comes to: `()`, it ran (exit 0);
/// a bool, whether its `--check` target holds (exit 0, or 1 for false).
pub(crate) trait Outcome {
    fn exit_code(self) -> ExitCode;
}

impl Outcome for () {
    fn exit_code(self) -> ExitCode {
        ExitCode::SUCCESS
    }
}

impl Outcome for bool {
    fn exit_code(self) -> ExitCode {
        if self {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------
// The daemon in its scratch world.

/// The `9agents` cargo built for the bench.
pub(crate) fn default_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_9agents"))
}

/// A scratch directory for one bench run, holding `home/`, `run/` (the
/// runtime dir) and whatever the bench adds; removed when dropped.
pub(crate) struct Scratch {
    pub dir: PathBuf,
}

impl Scratch {
    pub(crate) fn new(bench: &str) -> io::Result<Scratch> {
        let dir = std::env::temp_dir().join(format!("9a-{bench}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["home", "run"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        Ok(Scratch { dir })
    }

    /// An empty fixture process table at `<dir>/proc`: no agent runs.
    pub(crate) fn fixture_proc(&self) -> io::Result<PathBuf> {
        let proc = self.dir.join("proc");
        std::fs::create_dir_all(&proc)?;
        std::fs::write(proc.join("stat"), "cpu  1 2 3 4\nbtime 1764000000\n")?;
        std::fs::write(proc.join("locks"), "")?;
        Ok(proc)
    }
}

/// `<proc>/<pid>/` of a fixture Claude Code agent: its stat (starting at
/// `start` ticks), command line, empty environment, `cwd` and fds 0-2 on
/// /dev/null.
pub(crate) fn fixture_claude_process(dir: &Path, pid: u32, start: u64, cwd: &str) -> io::Result<()> {
    std::fs::create_dir_all(dir.join("fd"))?;
    let middle = vec!["0"; 17].join(" ");
    std::fs::write(dir.join("stat"), format!("{pid} (claude) S 1 {middle} {start} 5000 300\n"))?;
    std::fs::write(dir.join("cmdline"), b"claude\0")?;
    std::fs::write(dir.join("environ"), b"")?;
    std::os::unix::fs::symlink(cwd, dir.join("cwd"))?;
    for n in 0..3 {
        std::os::unix::fs::symlink("/dev/null", dir.join("fd").join(n.to_string()))?;
    }
    Ok(())
}

/// A Claude Code registry record (`~/.claude/sessions/<pid>.json`).
pub(crate) fn claude_record(pid: u32, sid: &str, cwd: &str, start: u64, status: &str, name: &str) -> String {
    format!(
        r#"{{"pid":{pid},"sessionId":"{sid}","cwd":"{cwd}","procStart":"{start}","status":"{status}","name":"{name}"}}"#
    )
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A daemon of the bench's: its own socket (`--no-post --unix`) and log in
/// the scratch dir, the scratch `HOME` and runtime dir, nothing else of the
/// bench's environment. Killed if dropped still running.
pub(crate) struct Daemon {
    child: Child,
    pub pid: u32,
    pub sock: PathBuf,
    pub log: PathBuf,
}

impl Daemon {
    /// Start `bin` with `args` and wait until it listens and sleeps in its
    /// loop (as rss.sh: the socket exists and the process is asleep; no
    /// probe connection).
    pub(crate) fn spawn<S: AsRef<OsStr>>(bin: &Path, s: &Scratch, args: &[S]) -> io::Result<Daemon> {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let (sock, log) = (s.dir.join(format!("d{n}.sock")), s.dir.join(format!("d{n}.log")));
        let child = Command::new(bin)
            .args(["--no-post", "--unix"])
            .arg(&sock)
            .args(args)
            .env_clear()
            .env("HOME", s.dir.join("home"))
            .env("XDG_RUNTIME_DIR", s.dir.join("run"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("spawn {}: {e}", bin.display())))?;
        let pid = child.id();
        let mut d = Daemon { child, pid, sock, log };
        let deadline = Instant::now() + SPAWN_DEADLINE;
        while !(std::fs::symlink_metadata(&d.sock).is_ok_and(|m| m.file_type().is_socket()) && d.asleep()) {
            if let Some(status) = d.child.try_wait()? {
                return Err(io::Error::other(format!(
                    "the daemon exited ({status}) before listening: {}",
                    d.log_tail()
                )));
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!("no socket at {} after {SPAWN_DEADLINE:?}", d.sock.display())));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(d)
    }

    pub(crate) fn asleep(&self) -> bool {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        status.lines().any(|l| l.starts_with("State:") && l.contains("S (sleeping)"))
    }

    pub(crate) fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid)).map_or(0, |d| d.count())
    }

    /// The fd count once two readings 20 ms apart agree.
    pub(crate) fn settled_fds(&self) -> usize {
        let deadline = Instant::now() + SETTLE_DEADLINE;
        let mut last = self.fds();
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let now = self.fds();
            if now == last || Instant::now() > deadline {
                return now;
            }
            last = now;
        }
    }

    /// Poll until the fd count is at most `want` (or `SETTLE_DEADLINE`);
    /// the count then.
    pub(crate) fn wait_fds(&self, want: usize) -> usize {
        let deadline = Instant::now() + SETTLE_DEADLINE;
        loop {
            let now = self.fds();
            if now <= want || Instant::now() > deadline {
                return now;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Memory once the loop is asleep and two readings 50 ms apart agree.
    pub(crate) fn settled_mem(&self) -> io::Result<Mem> {
        let deadline = Instant::now() + SETTLE_DEADLINE;
        let mut last = Mem::of(self.pid)?;
        loop {
            std::thread::sleep(Duration::from_millis(50));
            let now = Mem::of(self.pid)?;
            if (now.rss_kib == last.rss_kib && self.asleep()) || Instant::now() > deadline {
                return Ok(now);
            }
            last = now;
        }
    }

    /// Ask for the status line (SIGUSR1) and wait for it in the log.
    pub(crate) fn status_line(&self) -> Option<String> {
        let count = |text: &str| text.lines().filter(|l| l.starts_with("9agents status:")).count();
        let before = count(&std::fs::read_to_string(&self.log).unwrap_or_default());
        // SAFETY: kill(2) on the pid of our child, not yet reaped.
        unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGUSR1) };
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            if count(&text) > before {
                return text.lines().rfind(|l| l.starts_with("9agents status:")).map(str::to_string);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// One `name=value` field of the status line.
    pub(crate) fn status_field(&self, name: &str) -> Option<u64> {
        let line = self.status_line()?;
        line.split_whitespace().find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
    }

    /// SIGTERM and a clean exit, bounded.
    pub(crate) fn stop(mut self) -> io::Result<()> {
        // SAFETY: kill(2) on the pid of our child, not yet reaped.
        unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + SPAWN_DEADLINE;
        loop {
            if let Some(s) = self.child.try_wait()? {
                return if s.success() {
                    Ok(())
                } else {
                    Err(io::Error::other(format!("the daemon exited {s} on SIGTERM: {}", self.log_tail())))
                };
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!("the daemon ignored SIGTERM for {SPAWN_DEADLINE:?}; killed")));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(5)..].join(" | ")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub(crate) struct Mem {
    pub rss_kib: u64,
    pub hwm_kib: u64,
}

impl Mem {
    pub(crate) fn of(pid: u32) -> io::Result<Mem> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        Ok(Mem { rss_kib: kib_field(&status, "VmRSS:")?, hwm_kib: kib_field(&status, "VmHWM:")? })
    }
}

/// A process's CPU time and minor page faults so far, from /proc/<pid>/stat.
#[derive(Clone, Copy)]
pub(crate) struct Cpu {
    pub secs: f64,
    pub minflt: u64,
}

impl Cpu {
    pub(crate) fn of(pid: u32) -> Option<Cpu> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the command's closing parenthesis start at field 3
        // (state): minflt is field 10, utime and stime 14 and 15.
        let f: Vec<&str> = stat[stat.rfind(')')? + 2..].split(' ').collect();
        let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let minflt = f.get(7)?.parse().ok()?;
        (hz > 0).then(|| Cpu { secs: ticks as f64 / hz as f64, minflt })
    }
}

/// The scheduler's account of a process's main thread (the daemon's loop)
/// so far, from /proc/<pid>/task/<pid>/schedstat: time on a CPU, and time
/// runnable but waiting for one. Nanoseconds, unlike `Cpu`'s clock ticks,
/// so a 100 ms index is measured, not rounded to ticks.
#[derive(Clone, Copy)]
pub(crate) struct Sched {
    pub ran: Duration,
    pub waited: Duration,
}

impl Sched {
    pub(crate) fn of(pid: u32) -> Option<Sched> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/schedstat")).ok()?;
        let mut f = text.split_whitespace().map(|v| v.parse::<u64>().ok());
        let (ran, waited) = (f.next()??, f.next()??);
        Some(Sched { ran: Duration::from_nanos(ran), waited: Duration::from_nanos(waited) })
    }

    /// What happened between `self` and `later`.
    pub(crate) fn since(self, later: Sched) -> Sched {
        Sched { ran: later.ran.saturating_sub(self.ran), waited: later.waited.saturating_sub(self.waited) }
    }
}

/// A `Name:   1234 kB` line of a /proc status-like file.
pub(crate) fn kib_field(text: &str, name: &str) -> io::Result<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| io::Error::other(format!("no {name} field")))
}

pub(crate) fn mem_available_kib() -> Option<u64> {
    kib_field(&std::fs::read_to_string("/proc/meminfo").ok()?, "MemAvailable:").ok()
}

/// Raise this process's soft RLIMIT_NOFILE to its hard limit.
pub(crate) fn raise_nofile() {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid rlimit pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

/// The CPU's model and, when the machine is busy, a warning: the two lines
/// the in-memory benches print before their runs. `unknown` stands for a
/// model /proc/cpuinfo does not name.
pub(crate) fn print_cpu_and_load(unknown: &str) {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("  cpu: {} ({cpus} available)", cpu_model().unwrap_or_else(|| unknown.into()));
    if let Some(load) = loadavg() {
        let busy = if load >= cpus as f64 * 0.5 { ": the machine is busy, expect noise" } else { "" };
        println!("  load average (1 min) before the runs: {load:.2}{busy}");
    }
}

/// The 1-minute load average, from /proc/loadavg.
pub(crate) fn loadavg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// The CPU's model name, from /proc/cpuinfo.
pub(crate) fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

/// The machine, for the first line a bench prints.
pub(crate) fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| kib_field(&m, "MemTotal:").ok());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    format!(
        "{cpus} CPUs, {:.1} GiB RAM ({:.1} GiB available), load average {}",
        total.unwrap_or(0) as f64 / (1 << 20) as f64,
        mem_available_kib().unwrap_or(0) as f64 / (1 << 20) as f64,
        load.split_whitespace().next().unwrap_or("?")
    )
}

/// A client of the bench's: 9P2000 as `bench` over a unix socket whose
/// reads and writes give up after `timeout`.
pub(crate) fn client(sock: &Path, msize: u32, timeout: Duration) -> io::Result<Client> {
    let stream = UnixStream::connect(sock)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let config = Config { dialect: Dialect::P2000, msize, uname: "bench".into(), aname: String::new() };
    Client::handshake(Conn::Unix(stream), &config)
}

// ---------------------------------------------------------------------------
// Figures and the final table.

pub(crate) struct Row {
    pub scenario: String,
    pub figure: String,
    pub value: String,
    pub target: String,
    /// None: a figure without a target.
    pub pass: Option<bool>,
}

impl Row {
    pub(crate) fn new(scenario: &str, figure: &str, value: String, target: &str, pass: Option<bool>) -> Row {
        Row { scenario: scenario.into(), figure: figure.into(), value, target: target.into(), pass }
    }
}

pub(crate) fn print_table(rows: &[Row]) {
    let w = |f: fn(&Row) -> &str, min: usize| rows.iter().map(|r| f(r).chars().count()).max().unwrap_or(0).max(min);
    let (ws, wf, wv, wt) = (w(|r| &r.scenario, 8), w(|r| &r.figure, 6), w(|r| &r.value, 5), w(|r| &r.target, 6));
    println!("\n{:<ws$}  {:<wf$}  {:<wv$}  {:<wt$}  verdict", "scenario", "figure", "value", "target");
    println!("{}", "-".repeat(ws + wf + wv + wt + 15));
    for r in rows {
        let verdict = match r.pass {
            Some(true) => "PASS",
            Some(false) => "MISS",
            None => "-",
        };
        println!("{:<ws$}  {:<wf$}  {:<wv$}  {:<wt$}  {verdict}", r.scenario, r.figure, r.value, r.target);
    }
    let (pass, miss) =
        (rows.iter().filter(|r| r.pass == Some(true)).count(), rows.iter().filter(|r| r.pass == Some(false)).count());
    println!("{pass} PASS, {miss} MISS");
}

pub(crate) fn sorted(v: &[Duration]) -> Vec<Duration> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// The `q` quantile of sorted `v` (nearest rank); zero when `v` is empty.
pub(crate) fn quantile(v: &[Duration], q: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The daemon's indexing loop without the I/O: feed `idx` a window of
/// `window` bytes, move on by what it used (whole lines), and, as the
/// daemon does, offer a window twice as wide while a line does not fit,
/// back to `window` after. Returns the index, and how often a window grew.
pub(crate) fn index_in_windows(data: &[u8], window: usize, mut idx: Index) -> (Index, u64) {
    let (mut at, mut win, mut grown) = (0usize, window, 0u64);
    while at < data.len() {
        let end = (at + win).min(data.len());
        let used = idx.feed(at as u64, std::hint::black_box(&data[at..end]));
        if used == 0 {
            if idx.full() || end == data.len() {
                break;
            }
            win *= 2;
            grown += 1;
            continue;
        }
        (at, win) = (at + used, window);
    }
    (idx, grown)
}

/// Another client stat'ing `/README` in a loop on its own connection
/// until the returned flag is raised; the thread gives back each stat's
/// time.
pub(crate) type Stats =
    (std::sync::Arc<std::sync::atomic::AtomicBool>, std::thread::JoinHandle<io::Result<Vec<Duration>>>);

/// Start the stat loop on `other` (a connection of its own).
pub(crate) fn stat_client(mut other: Client) -> Stats {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::spawn(move || -> io::Result<Vec<Duration>> {
        let fid = other.walk("README")?;
        let mut t = Vec::new();
        while !flag.load(Ordering::Relaxed) {
            let at = Instant::now();
            other.stat(fid)?;
            t.push(at.elapsed());
        }
        Ok(t)
    });
    (stop, thread)
}

/// Stop the stat loop: each stat's time.
pub(crate) fn stop_stats((stop, thread): Stats) -> io::Result<Vec<Duration>> {
    stop.store(true, Ordering::Relaxed);
    thread.join().map_err(|_| io::Error::other("the stat thread panicked"))?
}
