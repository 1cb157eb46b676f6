//! The integration tests' harness: the real `9agents` binary, started in a
//! scratch world, and a raw 9P connection to it.
//!
//! Every daemon a test starts gets a fresh scratch directory of its own
//! (under the system temp dir, mode 0700) holding its `XDG_RUNTIME_DIR` and
//! its `HOME`, and an environment cleared of everything else, so no test
//! ever posts into, or reads from, the real runtime directory or home of the
//! person running the suite. The binary is the one Cargo built for this test
//! run (`CARGO_BIN_EXE_9agents`): the harness builds nothing.
//!
//! Nothing here sleeps to synchronise. Start-up is a poll of the socket
//! against a deadline; exit is a poll of the child against a deadline; a
//! reply is a read with a timeout. When a deadline passes the test fails
//! with the daemon's stderr in the message, which the harness captures from
//! the first byte.
//!
//! `Conn` speaks 9P with the crate's own codec (`nineagents::proto`) but
//! keeps the bytes in the test's hands: `send_raw` writes anything at all,
//! and every reply is kept whole (`Reply`) so a test can look at its bytes,
//! its tag, or its decoded message.

#![allow(dead_code, unused_imports)]

use std::ffi::OsStr;
use std::fs::{self, DirBuilder};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub(crate) use nineagents::proto::{self, Dialect, Qid, Rmsg, Stat, Tmsg, WalkNames};
pub(crate) use nineagents::proto::{
    msg, DMDIR, IOHDRSZ, NOFID, NONUNAME, NOTAG, OEXEC, ORCLOSE, ORDWR, OREAD, OTRUNC, OWRITE, QTDIR, QTFILE,
};

/// The binary under test, as Cargo built it for this run.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_9agents");
/// The one text every refused write carries (issue 2, CONFORMANCE 22).
pub(crate) const READ_ONLY: &str = "Read-only file system";
/// The fid every `session` attaches the root to.
pub(crate) const ROOT: u32 = 0;
/// The msize a `session` asks for: small enough that clamping is easy to
/// provoke, large enough for every reply of this tree.
pub(crate) const SESSION_MSIZE: u32 = 8192;

/// How long a daemon may take to start listening. Generous: CI machines
/// are slow and the cost is paid only when something is already broken.
pub(crate) const START_DEADLINE: Duration = Duration::from_secs(15);
/// How long a reply may take before the test calls the server stuck.
pub(crate) const REPLY_DEADLINE: Duration = Duration::from_secs(10);
/// How long a daemon may take to exit after a signal or a hang-up.
pub(crate) const EXIT_DEADLINE: Duration = Duration::from_secs(10);
/// How often a deadline poll looks again.
const POLL_EVERY: Duration = Duration::from_millis(5);

// ---------------------------------------------------------------------------
// Scratch worlds.

/// A directory of the test's own, removed when dropped: `runtime` is the
/// daemon's `XDG_RUNTIME_DIR`, `home` its `HOME`. Shared (`Arc`) when two
/// daemons must see the same post directory.
pub(crate) struct Scratch {
    pub root: PathBuf,
    pub runtime: PathBuf,
    pub home: PathBuf,
}

impl Scratch {
    pub(crate) fn new() -> Arc<Scratch> {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        // Short on purpose: a Unix socket path must fit 108 bytes.
        let name = format!("9a-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let root = std::env::temp_dir().join(name);
        let _ = fs::remove_dir_all(&root);
        let private =
            |p: &Path| DirBuilder::new().mode(0o700).create(p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
        private(&root);
        let (runtime, home) = (root.join("run"), root.join("home"));
        private(&runtime);
        private(&home);
        Arc::new(Scratch { root, runtime, home })
    }

    /// Write `data` at `rel` under this world's home, making directories.
    pub(crate) fn home_file(&self, rel: &str, data: &[u8]) -> PathBuf {
        let path = self.home.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, data).unwrap();
        path
    }

    /// Where a daemon started in this world posts the name `name`.
    pub(crate) fn post_path(&self, name: &str) -> PathBuf {
        self.runtime.join("9p").join(name)
    }

    /// A `9agents` command whose whole environment is this world's.
    pub(crate) fn command(&self) -> Command {
        self.command_of(Path::new(BIN))
    }

    /// `program` (a wrapper, or a copy of the binary) run in this world's
    /// environment, as `command` runs the binary.
    pub(crate) fn command_of(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("USER", "glenda")
            .env("RUST_BACKTRACE", "1")
            .current_dir(&self.home);
        cmd
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on right now (the kernel
/// picks it; the listener is dropped before the daemon binds it).
pub(crate) fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Spawn `cmd`, whose program is a file a test has just written (a copy
/// of /bin/sleep named after a harness): another test thread forking
/// meanwhile holds the fresh copy open for writing for a moment, and exec
/// fails with ETXTBSY until its child has exec'd or exited, so that one
/// error is retried until the start deadline.
pub(crate) fn spawn_fresh(cmd: &mut Command) -> Child {
    let mut last = None;
    poll(START_DEADLINE, || match cmd.spawn() {
        Ok(c) => Some(c),
        Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
            last = Some(e);
            None
        }
        Err(e) => panic!("spawn {cmd:?}: {e}"),
    })
    .unwrap_or_else(|| panic!("spawn {cmd:?}: {last:?}"))
}

/// A session's `usage` file without its `today.` lines (what was spent
/// since local midnight depends on the day the test runs): its totals
/// and its models', what `Usage::render` says.
pub(crate) fn usage_totals(text: &[u8]) -> Vec<u8> {
    text.split_inclusive(|&b| b == b'\n').filter(|l| !l.starts_with(b"today.")).flatten().copied().collect()
}

/// Poll `f` until it returns `Some` or `deadline` passes.
pub(crate) fn poll<T>(deadline: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + deadline;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= end {
            return None;
        }
        std::thread::sleep(POLL_EVERY);
    }
}

// ---------------------------------------------------------------------------
// The daemon.

/// Where a started daemon is waited for, and dialled.
enum Ready {
    Unix(PathBuf),
    Tcp(SocketAddr),
    /// Not waited for (a daemon expected to fail, or `--fd`).
    Nothing,
}

/// A running `9agents` daemon. Dropping it sends SIGTERM, then SIGKILL if
/// it has not exited by the deadline.
pub(crate) struct Daemon {
    child: Option<Child>,
    status: Option<ExitStatus>,
    pub pid: u32,
    pub scratch: Arc<Scratch>,
    /// The Unix socket to dial, if it listens on one.
    pub socket: Option<PathBuf>,
    /// The TCP address to dial, if it listens on one.
    pub tcp: Option<SocketAddr>,
    stderr: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
}

impl Daemon {
    /// `--no-post --unix <scratch>/sock` plus `args`, ready to dial.
    pub(crate) fn start(args: &[&str]) -> Daemon {
        Daemon::start_in(&Scratch::new(), args)
    }

    /// As `start`, in a world the test has furnished (files in its home).
    pub(crate) fn start_in(scratch: &Arc<Scratch>, args: &[&str]) -> Daemon {
        let scratch = scratch.clone();
        let sock = scratch.root.join("sock");
        let spec = arg(&sock).to_owned();
        let mut all = vec!["--no-post", "--unix", spec.as_str()];
        all.extend_from_slice(args);
        Daemon::spawn_in(scratch, &all, Ready::Unix(sock))
    }

    /// Posted as the default name in `scratch`'s runtime dir, ready to dial.
    pub(crate) fn posted(scratch: &Arc<Scratch>, args: &[&str]) -> Daemon {
        let name = args.iter().position(|a| *a == "--name").map_or("agents", |i| args[i + 1]);
        let path = scratch.post_path(name);
        Daemon::spawn_in(scratch.clone(), args, Ready::Unix(path))
    }

    /// `--no-post --tcp 127.0.0.1:<a free port>` plus `args`, ready to dial.
    pub(crate) fn start_tcp(args: &[&str]) -> Daemon {
        let addr: SocketAddr = format!("127.0.0.1:{}", free_tcp_port()).parse().unwrap();
        let spec = addr.to_string();
        let mut all = vec!["--no-post", "--tcp", spec.as_str()];
        all.extend_from_slice(args);
        Daemon::spawn_in(Scratch::new(), &all, Ready::Tcp(addr))
    }

    /// Start with exactly `args`, waiting for nothing: for a daemon that is
    /// expected to refuse to start.
    pub(crate) fn spawn(scratch: &Arc<Scratch>, args: &[&str]) -> Daemon {
        Daemon::spawn_in(scratch.clone(), args, Ready::Nothing)
    }

    /// `--fd 3` with `stream` as the child's fd 3.
    pub(crate) fn start_on_fd(stream: OwnedFd, args: &[&str]) -> Daemon {
        let scratch = Scratch::new();
        let mut cmd = scratch.command();
        cmd.arg("--fd").arg("3").args(args);
        as_fd_3(&mut cmd, &stream);
        let daemon = Daemon::launch(scratch, cmd, Ready::Nothing);
        drop(stream);
        daemon
    }

    /// The daemon started the way systemd starts a socket-activated
    /// service: `fd` (which the test keeps, as systemd keeps its socket)
    /// as its fd 3, `LISTEN_FDS=1`, and `LISTEN_PID` set to `pid` — for
    /// `ListenPid::Daemon` the daemon's own pid, which only the process
    /// itself knows before exec, so a shell sets it to `$$` and execs the
    /// binary in its place. `args` and `env` are added; waits for nothing.
    pub(crate) fn start_passed(
        scratch: &Arc<Scratch>,
        fd: &OwnedFd,
        pid: ListenPid,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Daemon {
        let listen_pid = match pid {
            ListenPid::Daemon => "$$".to_owned(),
            ListenPid::Other(pid) => pid.to_string(),
        };
        let mut cmd = scratch.command_of(Path::new("/bin/sh"));
        let script = format!("LISTEN_PID={listen_pid} exec \"$0\" \"$@\"");
        cmd.arg("-c").arg(script).arg(BIN).args(args).env("LISTEN_FDS", "1");
        for (k, v) in env {
            cmd.env(k, v);
        }
        as_fd_3(&mut cmd, fd);
        Daemon::launch(scratch.clone(), cmd, Ready::Nothing)
    }

    /// Start `cmd` (a `9agents` however wrapped, in `scratch`'s world),
    /// waiting for nothing.
    pub(crate) fn spawn_command(scratch: &Arc<Scratch>, cmd: Command) -> Daemon {
        Daemon::launch(scratch.clone(), cmd, Ready::Nothing)
    }

    fn spawn_in(scratch: Arc<Scratch>, args: &[&str], ready: Ready) -> Daemon {
        let mut cmd = scratch.command();
        cmd.args(args);
        Daemon::launch(scratch, cmd, ready)
    }

    fn launch(scratch: Arc<Scratch>, mut cmd: Command, ready: Ready) -> Daemon {
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        // A copy of the binary a test has just written may be briefly busy.
        let mut child = spawn_fresh(&mut cmd);
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let (socket, tcp) = match &ready {
            Ready::Unix(p) => (Some(p.clone()), None),
            Ready::Tcp(a) => (None, Some(*a)),
            Ready::Nothing => (None, None),
        };
        let mut d = Daemon {
            pid: child.id(),
            child: Some(child),
            status: None,
            scratch,
            socket,
            tcp,
            stderr,
            reader: Some(reader),
        };
        d.wait_ready(&ready);
        d
    }

    /// Poll until a connection to the listening address is accepted by the
    /// kernel, failing at once if the daemon exits instead.
    fn wait_ready(&mut self, ready: &Ready) {
        if let Ready::Nothing = ready {
            return;
        }
        let up = poll(START_DEADLINE, || {
            if let Some(status) = self.try_status() {
                panic!("9agents exited during start-up ({status}); stderr:\n{}", self.stderr());
            }
            let ok = match ready {
                Ready::Unix(p) => UnixStream::connect(p).is_ok(),
                Ready::Tcp(a) => TcpStream::connect(a).is_ok(),
                Ready::Nothing => true,
            };
            ok.then_some(())
        });
        if up.is_none() {
            panic!("9agents did not start listening within {START_DEADLINE:?}; stderr:\n{}", self.stderr());
        }
    }

    /// Everything the daemon has written to stderr so far.
    pub(crate) fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Poll until stderr contains `needle`; the stderr then.
    pub(crate) fn wait_stderr(&self, needle: &str, deadline: Duration) -> String {
        poll(deadline, || Some(self.stderr()).filter(|s| s.contains(needle)))
            .unwrap_or_else(|| panic!("stderr never said {needle:?}; it says:\n{}", self.stderr()))
    }

    /// The exit status, if the daemon has exited.
    pub(crate) fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            if let Some(child) = self.child.as_mut() {
                self.status = child.try_wait().expect("try_wait");
            }
        }
        self.status
    }

    /// Wait (polling) for the daemon to exit; panics past `deadline`. Once
    /// it has exited its stderr is complete.
    pub(crate) fn wait_exit(&mut self, deadline: Duration) -> ExitStatus {
        let status = poll(deadline, || self.try_status())
            .unwrap_or_else(|| panic!("9agents still running after {deadline:?}; stderr:\n{}", self.stderr()));
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        status
    }

    pub(crate) fn is_running(&mut self) -> bool {
        self.try_status().is_none()
    }

    pub(crate) fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid; it has not been reaped
        // while `status` is None, so the pid cannot have been reused.
        let rc = unsafe { libc::kill(self.pid as i32, sig) };
        assert_eq!(rc, 0, "kill({}, {sig}): {}", self.pid, io::Error::last_os_error());
    }

    /// SIGKILL and reap, leaving whatever the daemon left on disk.
    pub(crate) fn kill_hard(&mut self) -> ExitStatus {
        self.signal(libc::SIGKILL);
        self.wait_exit(EXIT_DEADLINE)
    }

    /// A field of /proc/<pid>/status in kB (`VmRSS`, `VmHWM`, ...).
    pub(crate) fn status_kib(&self, field: &str) -> u64 {
        let text = fs::read_to_string(format!("/proc/{}/status", self.pid)).expect("read /proc/<pid>/status");
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{field}:")))
            .unwrap_or_else(|| panic!("no {field} in status"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    pub(crate) fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS")
    }

    /// How many descriptors the daemon has open.
    pub(crate) fn fd_count(&self) -> usize {
        fs::read_dir(format!("/proc/{}/fd", self.pid)).expect("read /proc/<pid>/fd").count()
    }

    /// What the daemon holds right now: SIGUSR1, then the status line it
    /// prints on stderr for it (polled for, never slept for).
    pub(crate) fn status_line(&self) -> Status {
        let before = status_lines(&self.stderr()).len();
        self.signal(libc::SIGUSR1);
        let line = poll(REPLY_DEADLINE, || status_lines(&self.stderr()).get(before).cloned())
            .unwrap_or_else(|| panic!("no status line after SIGUSR1; stderr:\n{}", self.stderr()));
        Status::parse(&line)
    }

    /// Poll the status line until `fields` stop changing: the same values
    /// in `samples` lines in a row (each a poll apart, so `samples` bounds
    /// how long "stable" must last). The last line.
    pub(crate) fn settled_status(&self, fields: &[&str], samples: usize) -> Status {
        let mut last = self.status_line();
        let mut same = 1;
        let settled = poll(SETTLE_DEADLINE, || {
            let now = self.status_line();
            let stable = fields.iter().all(|f| now.get(f) == last.get(f));
            same = if stable { same + 1 } else { 1 };
            last = now;
            (same >= samples).then(|| last.clone())
        });
        settled.unwrap_or_else(|| panic!("{fields:?} never settled; last status: {}", last.line))
    }

    /// A raw, unversioned connection.
    pub(crate) fn connect(&self) -> Conn {
        match (&self.socket, &self.tcp) {
            (Some(p), _) => Conn::unix(p),
            (None, Some(a)) => Conn::tcp(*a),
            (None, None) => panic!("this daemon has no address to dial"),
        }
    }

    /// A connection versioned to `dialect` at `SESSION_MSIZE`, with the root
    /// attached as fid `ROOT`.
    pub(crate) fn session(&self, dialect: Dialect) -> Conn {
        let mut c = self.connect();
        c.handshake(dialect);
        c
    }

    /// Run the built-in client (`9agents <args>`) in this daemon's world.
    pub(crate) fn client(&self, args: &[&str]) -> Output {
        self.client_with_stdin(args, b"")
    }

    pub(crate) fn client_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Output {
        run_client(&self.scratch, args, stdin)
    }
}

/// Whose pid `Daemon::start_passed` puts in `LISTEN_PID`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ListenPid {
    /// The daemon's: the sockets are for it.
    Daemon,
    /// Another process's: the variables were meant for someone else.
    Other(u32),
}

/// Make `fd` the child's fd 3, inheritable, between fork and exec.
fn as_fd_3(cmd: &mut Command, fd: &OwnedFd) {
    let raw = fd.as_raw_fd();
    // SAFETY: between fork and exec only async-signal-safe calls are made
    // (dup2, fcntl), on a descriptor the parent keeps open until spawn
    // returns.
    unsafe {
        cmd.pre_exec(move || {
            if raw == 3 {
                let flags = libc::fcntl(3, libc::F_GETFD);
                if flags < 0 || libc::fcntl(3, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(io::Error::last_os_error());
                }
            } else if libc::dup2(raw, 3) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.is_running() {
            self.signal(libc::SIGTERM);
            if poll(EXIT_DEADLINE, || self.try_status()).is_none() {
                let _ = self.child.as_mut().unwrap().kill();
                let _ = self.child.as_mut().unwrap().wait();
            }
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        if std::thread::panicking() {
            eprintln!("--- 9agents (pid {}) stderr ---\n{}--- end ---", self.pid, self.stderr());
        }
    }
}

/// Run `9agents <args>` in `scratch`'s world with `stdin`, to completion
/// (bounded: a client that hangs is killed at the deadline and fails).
pub(crate) fn run_client(scratch: &Scratch, args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = scratch.command();
    cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn the client");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let pid = child.id();
    let watchdog_done = Arc::new(Mutex::new(false));
    let done = watchdog_done.clone();
    let watchdog = std::thread::spawn(move || {
        let fired = poll(REPLY_DEADLINE * 2, || (*done.lock().unwrap()).then_some(())).is_none();
        if fired {
            // SAFETY: kill(2) of our own child, which has not been reaped
            // (the waiter below has not returned, or `done` would be set).
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        fired
    });
    let out = child.wait_with_output().expect("wait for the client");
    *watchdog_done.lock().unwrap() = true;
    let _ = feeder.join();
    assert!(!watchdog.join().unwrap(), "`9agents {}` hung and was killed", args.join(" "));
    out
}

// ---------------------------------------------------------------------------
// The status line (SIGUSR1).

/// How long the daemon's counts may take to settle after a flood.
pub(crate) const SETTLE_DEADLINE: Duration = Duration::from_secs(20);
/// What every status line begins with.
const STATUS_PREFIX: &str = "9agents status:";

/// The whole status lines in `stderr`, oldest first.
fn status_lines(stderr: &str) -> Vec<String> {
    stderr
        .split_inclusive('\n')
        .filter(|l| l.ends_with('\n') && l.starts_with(STATUS_PREFIX))
        .map(|l| l.trim_end().to_owned())
        .collect()
}

/// One status line: `9agents status: conns=.. fids=.. ..`, by field.
#[derive(Clone, Debug)]
pub(crate) struct Status {
    pub line: String,
    fields: Vec<(String, u64)>,
}

impl Status {
    fn parse(line: &str) -> Status {
        let rest = line.strip_prefix(STATUS_PREFIX).expect("a status line");
        let fields = rest
            .split_whitespace()
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("status field {kv:?} in {line:?}"));
                (k.to_owned(), v.parse().unwrap_or_else(|_| panic!("status field {kv:?} in {line:?}")))
            })
            .collect();
        Status { line: line.to_owned(), fields }
    }

    /// The field `name`; panics if this daemon's status line has none.
    pub(crate) fn get(&self, name: &str) -> u64 {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|&(_, v)| v)
            .unwrap_or_else(|| panic!("no {name} in the status line {:?}", self.line))
    }
}

// ---------------------------------------------------------------------------
// Raw connections.

enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

/// How a connection ended when a reply was awaited.
#[derive(Debug)]
pub(crate) enum End {
    /// The server closed it (EOF or reset).
    Closed,
    /// Nothing arrived by the deadline.
    Timeout,
    Io(io::Error),
}

/// One raw 9P connection. `dialect` and `msize` are what `send` encodes
/// with and `recv` decodes with; `version` updates them from Rversion.
pub(crate) struct Conn {
    stream: Stream,
    pub dialect: Dialect,
    pub msize: u32,
    next_tag: u16,
    buf: Vec<u8>,
}

impl Conn {
    pub(crate) fn unix(path: &Path) -> Conn {
        let s = UnixStream::connect(path).unwrap_or_else(|e| panic!("connect {}: {e}", path.display()));
        Conn::over(Stream::Unix(s))
    }

    pub(crate) fn tcp(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        s.set_nodelay(true).unwrap();
        Conn::over(Stream::Tcp(s))
    }

    pub(crate) fn from_unix(s: UnixStream) -> Conn {
        Conn::over(Stream::Unix(s))
    }

    fn over(stream: Stream) -> Conn {
        let mut c = Conn { stream, dialect: Dialect::P2000, msize: SESSION_MSIZE, next_tag: 1, buf: Vec::new() };
        c.set_read_timeout(REPLY_DEADLINE);
        c
    }

    pub(crate) fn set_read_timeout(&mut self, t: Duration) {
        match &self.stream {
            Stream::Unix(s) => s.set_read_timeout(Some(t)).unwrap(),
            Stream::Tcp(s) => s.set_read_timeout(Some(t)).unwrap(),
        }
    }

    pub(crate) fn set_write_timeout(&mut self, t: Option<Duration>) {
        match &self.stream {
            Stream::Unix(s) => s.set_write_timeout(t).unwrap(),
            Stream::Tcp(s) => s.set_write_timeout(t).unwrap(),
        }
    }

    pub(crate) fn unix_stream(&self) -> &UnixStream {
        match &self.stream {
            Stream::Unix(s) => s,
            Stream::Tcp(_) => panic!("not a Unix connection"),
        }
    }

    fn io(&mut self) -> &mut dyn ReadWrite {
        match &mut self.stream {
            Stream::Unix(s) => s,
            Stream::Tcp(s) => s,
        }
    }

    /// A fresh tag: never NOTAG, never one handed out recently.
    pub(crate) fn tag(&mut self) -> u16 {
        let t = self.next_tag;
        self.next_tag = if self.next_tag >= 0xFFF0 { 1 } else { self.next_tag + 1 };
        t
    }

    /// The bytes of `msg` on `tag`, in this connection's dialect.
    pub(crate) fn encode(&self, tag: u16, msg: &Tmsg<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        proto::encode_t(&mut out, tag, msg, self.dialect);
        out
    }

    /// Write exactly these bytes.
    pub(crate) fn send_raw(&mut self, bytes: &[u8]) {
        self.io().write_all(bytes).expect("send");
    }

    /// Write these bytes, reporting failure instead of panicking (a server
    /// may already have hung up).
    pub(crate) fn try_send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.io().write_all(bytes)
    }

    pub(crate) fn send(&mut self, tag: u16, msg: &Tmsg<'_>) {
        let bytes = self.encode(tag, msg);
        self.send_raw(&bytes);
    }

    /// The next whole reply, or how the connection ended instead.
    pub(crate) fn next(&mut self) -> Result<Reply, End> {
        loop {
            if self.buf.len() >= 4 {
                let size = u32::from_le_bytes(self.buf[..4].try_into().unwrap()) as usize;
                assert!(size >= 7, "the server framed a reply of size {size}");
                if self.buf.len() >= size {
                    let bytes: Vec<u8> = self.buf.drain(..size).collect();
                    return Ok(Reply { bytes, dialect: self.dialect });
                }
            }
            let mut chunk = [0u8; 64 * 1024];
            match self.io().read(&mut chunk) {
                Ok(0) => return Err(End::Closed),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    return Err(End::Timeout)
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe) => {
                    return Err(End::Closed)
                }
                Err(e) => return Err(End::Io(e)),
            }
        }
    }

    /// The next whole reply; panics if the connection ends instead.
    pub(crate) fn recv(&mut self) -> Reply {
        self.next().unwrap_or_else(|end| panic!("expected a reply, got {end:?}"))
    }

    /// Assert the server closes the connection without answering.
    pub(crate) fn expect_closed(&mut self) {
        match self.next() {
            Err(End::Closed) => {}
            Ok(r) => panic!("expected the connection closed, got a reply: {r:?}"),
            Err(e) => panic!("expected the connection closed, got {e:?}"),
        }
    }

    /// Send `msg` on a fresh tag and return its reply, checking the tag.
    pub(crate) fn rpc(&mut self, msg: &Tmsg<'_>) -> Reply {
        let tag = self.tag();
        self.send(tag, msg);
        let r = self.recv();
        assert_eq!(r.tag(), tag, "reply on the wrong tag: {r:?}");
        r
    }

    // --- one call per message ---------------------------------------------

    /// Tversion on NOTAG; on Rversion, adopt its msize and dialect.
    pub(crate) fn version(&mut self, msize: u32, version: &str) -> Reply {
        self.send(NOTAG, &Tmsg::Version { msize, version: version.as_bytes() });
        let r = self.recv();
        assert_eq!(r.tag(), NOTAG, "Rversion on the wrong tag: {r:?}");
        if let Rmsg::Version { msize, version } = r.msg() {
            self.msize = msize;
            if let Some(d) = Dialect::negotiate(version) {
                self.dialect = d;
            }
        }
        r
    }

    pub(crate) fn attach(&mut self, fid: u32) -> Reply {
        self.attach_with(fid, NOFID, "")
    }

    pub(crate) fn attach_with(&mut self, fid: u32, afid: u32, aname: &str) -> Reply {
        self.rpc(&Tmsg::Attach { fid, afid, uname: b"glenda", aname: aname.as_bytes(), n_uname: self.n_uname() })
    }

    pub(crate) fn auth(&mut self, afid: u32) -> Reply {
        self.rpc(&Tmsg::Auth { afid, uname: b"glenda", aname: b"", n_uname: self.n_uname() })
    }

    fn n_uname(&self) -> u32 {
        match self.dialect {
            Dialect::P2000 => NONUNAME,
            Dialect::P2000u | Dialect::L => 0,
        }
    }

    pub(crate) fn walk(&mut self, fid: u32, newfid: u32, names: &[&str]) -> Reply {
        let names: Vec<&[u8]> = names.iter().map(|n| n.as_bytes()).collect();
        self.walk_bytes(fid, newfid, &names)
    }

    pub(crate) fn walk_bytes(&mut self, fid: u32, newfid: u32, names: &[&[u8]]) -> Reply {
        let tag = self.tag();
        self.send_raw(&twalk_bytes(tag, fid, newfid, names));
        let r = self.recv();
        assert_eq!(r.tag(), tag, "reply on the wrong tag: {r:?}");
        r
    }

    pub(crate) fn open(&mut self, fid: u32, mode: u8) -> Reply {
        self.rpc(&Tmsg::Open { fid, mode })
    }

    pub(crate) fn read(&mut self, fid: u32, offset: u64, count: u32) -> Reply {
        self.rpc(&Tmsg::Read { fid, offset, count })
    }

    pub(crate) fn clunk(&mut self, fid: u32) -> Reply {
        self.rpc(&Tmsg::Clunk { fid })
    }

    pub(crate) fn stat(&mut self, fid: u32) -> Reply {
        self.rpc(&Tmsg::Stat { fid })
    }

    // --- the same, asserting success ---------------------------------------

    /// Tversion + Tattach of the root as `ROOT`.
    pub(crate) fn handshake(&mut self, dialect: Dialect) -> Qid {
        let r = self.version(SESSION_MSIZE, dialect.version());
        assert_eq!(r.msg(), Rmsg::Version { msize: SESSION_MSIZE, version: dialect.version().as_bytes() });
        self.attach_ok(ROOT)
    }

    pub(crate) fn attach_ok(&mut self, fid: u32) -> Qid {
        match self.attach(fid).msg() {
            Rmsg::Attach { qid } => qid,
            other => panic!("Tattach: {other:?}"),
        }
    }

    /// A walk that must succeed whole: its qids.
    pub(crate) fn walk_ok(&mut self, fid: u32, newfid: u32, names: &[&str]) -> Vec<Qid> {
        let r = self.walk(fid, newfid, names);
        let qids = r.qids();
        assert_eq!(qids.len(), names.len(), "walk {names:?} stopped short: {r:?}");
        qids
    }

    /// Walk from the root to `path` ("/a/b") as `newfid` and open it for
    /// reading.
    pub(crate) fn open_path(&mut self, path: &str, newfid: u32) -> Qid {
        let names: Vec<&str> = path.split('/').filter(|n| !n.is_empty()).collect();
        self.walk_ok(ROOT, newfid, &names);
        self.open_ok(newfid, OREAD)
    }

    pub(crate) fn open_ok(&mut self, fid: u32, mode: u8) -> Qid {
        match self.open(fid, mode).msg() {
            Rmsg::Open { qid, .. } => qid,
            other => panic!("Topen: {other:?}"),
        }
    }

    pub(crate) fn read_ok(&mut self, fid: u32, offset: u64, count: u32) -> Vec<u8> {
        self.read(fid, offset, count).data()
    }

    /// Read an open file from 0 to its end, `msize - IOHDRSZ` at a time.
    pub(crate) fn read_all(&mut self, fid: u32) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let chunk = self.read_ok(fid, out.len() as u64, self.msize - IOHDRSZ);
            if chunk.is_empty() {
                return out;
            }
            out.extend_from_slice(&chunk);
        }
    }

    /// Open `fid` for reading and read it whole.
    pub(crate) fn cat_fid(&mut self, fid: u32) -> Vec<u8> {
        self.open_ok(fid, OREAD);
        self.read_all(fid)
    }

    /// Open `path` as `fid`, read it whole, clunk it.
    pub(crate) fn cat(&mut self, path: &str, fid: u32) -> Vec<u8> {
        self.open_path(path, fid);
        let data = self.read_all(fid);
        self.clunk_ok(fid);
        data
    }

    pub(crate) fn clunk_ok(&mut self, fid: u32) {
        let r = self.clunk(fid);
        assert_eq!(r.msg(), Rmsg::Clunk, "Tclunk {fid}");
    }

    pub(crate) fn stat_ok(&mut self, fid: u32) -> Entry {
        let r = self.stat(fid);
        match r.msg() {
            Rmsg::Stat { stat } => Entry::from_stat(&stat, proto::stat_size(&stat, self.dialect)),
            other => panic!("Tstat: {other:?}"),
        }
    }

    /// The entries of the directory at `path`, read whole with reads of
    /// `count` bytes through a fid of its own (`fid`, clunked after).
    pub(crate) fn list(&mut self, path: &str, fid: u32, count: u32) -> Vec<Entry> {
        self.open_path(path, fid);
        let mut entries = Vec::new();
        let mut offset = 0u64;
        loop {
            let data = self.read_ok(fid, offset, count);
            if data.is_empty() {
                break;
            }
            offset += data.len() as u64;
            entries.extend(entries_of(&data, self.dialect));
        }
        self.clunk_ok(fid);
        entries
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// A Twalk's bytes by hand, so a test can send more than MAXWELEM names
/// (which the codec, rightly, will not encode).
pub(crate) fn twalk_bytes(tag: u16, fid: u32, newfid: u32, names: &[&[u8]]) -> Vec<u8> {
    let mut body = Vec::new();
    body.push(msg::TWALK);
    body.extend_from_slice(&tag.to_le_bytes());
    body.extend_from_slice(&fid.to_le_bytes());
    body.extend_from_slice(&newfid.to_le_bytes());
    body.extend_from_slice(&(names.len() as u16).to_le_bytes());
    for n in names {
        body.extend_from_slice(&(n.len() as u16).to_le_bytes());
        body.extend_from_slice(n);
    }
    frame(&body)
}

/// size[4] in front of `body` (type[1] tag[2] ...).
pub(crate) fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = ((body.len() + 4) as u32).to_le_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// A message of type `ty` on `tag` with `body` after the header.
pub(crate) fn message(ty: u8, tag: u16, body: &[u8]) -> Vec<u8> {
    let mut b = vec![ty];
    b.extend_from_slice(&tag.to_le_bytes());
    b.extend_from_slice(body);
    frame(&b)
}

// ---------------------------------------------------------------------------
// Replies.

/// One whole reply, as it came off the wire.
pub(crate) struct Reply {
    pub bytes: Vec<u8>,
    pub dialect: Dialect,
}

impl Reply {
    pub(crate) fn tag(&self) -> u16 {
        u16::from_le_bytes([self.bytes[5], self.bytes[6]])
    }

    pub(crate) fn ty(&self) -> u8 {
        self.bytes[4]
    }

    /// The decoded message (strictly: a reply with bytes left over, or one
    /// cut short, fails the test).
    pub(crate) fn msg(&self) -> Rmsg<'_> {
        match proto::decode_r(&self.bytes, self.dialect) {
            Ok((_, m)) => m,
            Err(e) => panic!("undecodable reply {:02x?}: {e}", self.bytes),
        }
    }

    /// The error text and errno (0 in plain 9P2000), if this is an Rerror.
    pub(crate) fn error(&self) -> Option<(String, u32)> {
        match self.msg() {
            Rmsg::Error { ename, errno } => Some((String::from_utf8_lossy(ename).into_owned(), errno)),
            _ => None,
        }
    }

    /// Assert this is an Rerror; its text and errno.
    pub(crate) fn expect_error(&self) -> (String, u32) {
        self.error().unwrap_or_else(|| panic!("expected Rerror, got {self:?}"))
    }

    /// Assert this is an Rerror with exactly `text`.
    pub(crate) fn assert_error(&self, text: &str) {
        assert_eq!(self.expect_error().0, text, "{self:?}");
    }

    pub(crate) fn is_error(&self) -> bool {
        self.ty() == msg::RERROR
    }

    /// An Rwalk's qids.
    pub(crate) fn qids(&self) -> Vec<Qid> {
        match self.msg() {
            Rmsg::Walk { qids } => qids.as_slice().to_vec(),
            other => panic!("expected Rwalk, got {other:?}"),
        }
    }

    /// An Rread's data.
    pub(crate) fn data(&self) -> Vec<u8> {
        match self.msg() {
            Rmsg::Read { data } => data.to_vec(),
            other => panic!("expected Rread, got {other:?}"),
        }
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match proto::decode_r(&self.bytes, self.dialect) {
            Ok((tag, m)) => write!(f, "tag {tag} {m:?}"),
            Err(e) => write!(f, "undecodable {:02x?} ({e})", self.bytes),
        }
    }
}

/// A stat entry, owned: the client's `OwnedStat` (its fields read through
/// `Deref`), and the bytes it took on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    stat: nineagents::client::OwnedStat,
    /// The bytes the entry took on the wire, size[2] included.
    pub wire_len: usize,
}

impl std::ops::Deref for Entry {
    type Target = nineagents::client::OwnedStat;
    fn deref(&self) -> &Self::Target {
        &self.stat
    }
}

impl Entry {
    fn from_stat(s: &Stat<'_>, wire_len: usize) -> Entry {
        Entry { stat: s.into(), wire_len }
    }
}

/// The whole stat entries in a directory read's data; panics if the data
/// ends inside one (a 9P2000 directory read never splits an entry).
pub(crate) fn entries_of(data: &[u8], dialect: Dialect) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let (stat, used) = proto::decode_stat(&data[at..], dialect)
            .unwrap_or_else(|e| panic!("directory data does not hold whole entries at byte {at}: {e}"));
        out.push(Entry::from_stat(&stat, used));
        at += used;
    }
    out
}

/// The names of `entries`, sorted.
pub(crate) fn names(entries: &[Entry]) -> Vec<String> {
    let mut v: Vec<String> = entries.iter().map(|e| e.name.clone()).collect();
    v.sort();
    v
}

/// What names an entry for as long as the tree stands: its name, qid type
/// and qid path (a fact's length and qid version move with its text).
pub(crate) fn ids(entries: &[Entry]) -> Vec<(String, u8, u64)> {
    entries.iter().map(|e| (e.name.clone(), e.qid.ty, e.qid.path)).collect()
}

/// The text `/README` serves: the crate's own copy of it.
pub(crate) fn readme() -> &'static [u8] {
    nineagents::tree::README.as_bytes()
}

/// Is `p` a Unix socket (lstat, not followed)?
pub(crate) fn is_socket(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    fs::symlink_metadata(p).map(|m| m.file_type().is_socket()).unwrap_or(false)
}

/// `s` as a path argument.
pub(crate) fn arg(p: &Path) -> &str {
    p.to_str().expect("scratch paths are UTF-8")
}

pub(crate) fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

// ---------------------------------------------------------------------------
// Mirrored homes (the tests/mirror_*.rs files): fixtures on disk, the map
// from the tree to the disk, and a client that walks the whole tree.

/// What every file that must stay invisible holds, in the fixtures as in
/// `demo/home` (demo/README.md): one occurrence in served bytes is a leak.
pub(crate) const SECRET: &[u8] = b"DEMO-SECRET-must-never-be-served";

/// The fid a crawl lists and reads through (one at a time, clunked after),
/// far from the small numbers tests use.
pub(crate) const CRAWL_FID: u32 = 0xC0_0000;

/// Every mount of the tree: its path, and the path under a home it mirrors
/// (issue 3, "The tree").
pub(crate) const MOUNTS: &[(&str, &str)] = &[
    ("/claude/history", ".claude/history.jsonl"),
    ("/claude/projects", ".claude/projects"),
    ("/claude/skills", ".claude/skills"),
    ("/codex/history", ".codex/history.jsonl"),
    ("/codex/session-index", ".codex/session_index.jsonl"),
    ("/codex/sessions", ".codex/sessions"),
    ("/dsh", ".dsh"),
    ("/hermes", ".hermes"),
    ("/omp", ".omp/agent"),
    ("/skills/claude", ".claude/skills"),
    ("/skills/codex", ".codex/skills"),
    ("/skills/omp", ".omp/agent/skills"),
];

/// The demo home shipped in the repository (what `--demo` serves).
pub(crate) fn demo_home() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("demo/home")
}

/// The file on disk that the tree path `tree_path` mirrors under `home`;
/// `None` for the skeleton (`/`, `/claude`, `/README`, ...).
pub(crate) fn disk_path(home: &Path, tree_path: &str) -> Option<PathBuf> {
    MOUNTS.iter().find_map(|(mount, rel)| {
        let rest = tree_path.strip_prefix(mount)?;
        if rest.is_empty() {
            return Some(home.join(rel));
        }
        Some(home.join(rel).join(rest.strip_prefix('/')?))
    })
}

/// Does `hay` hold `needle` anywhere?
pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// `dir` + `/` + `name`, for tree paths ("/" + "a" is "/a").
pub(crate) fn join_tree(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The names of a tree path, for a walk from the root.
pub(crate) fn tree_names(path: &str) -> Vec<&str> {
    path.split('/').filter(|n| !n.is_empty()).collect()
}

impl Scratch {
    /// A directory (and its parents) at `rel` under this world's home.
    pub(crate) fn home_dir(&self, rel: &str) -> PathBuf {
        let path = self.home.join(rel);
        fs::create_dir_all(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        path
    }

    /// A symlink at `rel` under this world's home pointing at `target`
    /// (written as given: relative targets stay relative).
    pub(crate) fn home_symlink(&self, rel: &str, target: &Path) -> PathBuf {
        let path = self.home.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, &path).unwrap_or_else(|e| panic!("symlink {}: {e}", path.display()));
        path
    }

    /// A FIFO at `rel` under this world's home.
    pub(crate) fn home_fifo(&self, rel: &str) -> PathBuf {
        let path = self.home.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let c = std::ffi::CString::new(arg(&path)).unwrap();
        // SAFETY: mkfifo(3) on a NUL-terminated path we own.
        let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
        assert_eq!(rc, 0, "mkfifo {}: {}", path.display(), io::Error::last_os_error());
        path
    }

    /// Write `data` at `rel` under this world's root but outside its home:
    /// a place no root reaches.
    pub(crate) fn outside_file(&self, rel: &str, data: &[u8]) -> PathBuf {
        let path = self.root.join("outside").join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, data).unwrap();
        path
    }
}

/// One thing a crawl found: its tree path, its listing entry, and (for a
/// file) the bytes it read whole, or the error its open answered.
#[derive(Debug)]
pub(crate) struct Crawled {
    pub path: String,
    pub entry: Entry,
    pub data: Result<Vec<u8>, String>,
}

impl Conn {
    /// Walk from the root to the tree path `path` as `newfid`.
    pub(crate) fn walk_path(&mut self, path: &str, newfid: u32) -> Reply {
        let names = tree_names(path);
        assert!(names.len() <= 16, "{path} is deeper than one walk");
        self.walk(ROOT, newfid, &names)
    }

    /// Does a walk from the root reach all of `path`? (A walk that does
    /// not leaves no fid behind.)
    pub(crate) fn reaches(&mut self, path: &str, newfid: u32) -> bool {
        let r = self.walk_path(path, newfid);
        let whole = !r.is_error() && r.qids().len() == tree_names(path).len();
        if whole {
            self.clunk_ok(newfid);
        }
        whole
    }

    /// The entries of the directory at `path` read whole through `fid`
    /// (clunked after), or the error text its walk or open answered.
    pub(crate) fn try_list(&mut self, path: &str, fid: u32, count: u32) -> Result<Vec<Entry>, String> {
        let r = self.walk_path(path, fid);
        if let Some((text, _)) = r.error() {
            return Err(text);
        }
        if r.qids().len() != tree_names(path).len() {
            return Err(format!("walk stopped after {} of {} names", r.qids().len(), tree_names(path).len()));
        }
        let opened = self.open(fid, OREAD);
        if let Some((text, _)) = opened.error() {
            self.clunk_ok(fid);
            return Err(text);
        }
        let mut entries = Vec::new();
        let mut offset = 0u64;
        loop {
            let r = self.read(fid, offset, count);
            if let Some((text, _)) = r.error() {
                self.clunk_ok(fid);
                return Err(text);
            }
            let data = r.data();
            if data.is_empty() {
                break;
            }
            offset += data.len() as u64;
            entries.extend(entries_of(&data, self.dialect));
        }
        self.clunk_ok(fid);
        Ok(entries)
    }

    /// Open the file at `path` as `fid`, read it whole, clunk it; or the
    /// error text its walk or open answered.
    pub(crate) fn try_cat(&mut self, path: &str, fid: u32) -> Result<Vec<u8>, String> {
        let r = self.walk_path(path, fid);
        if let Some((text, _)) = r.error() {
            return Err(text);
        }
        if r.qids().len() != tree_names(path).len() {
            return Err(format!("walk stopped after {} of {} names", r.qids().len(), tree_names(path).len()));
        }
        let opened = self.open(fid, OREAD);
        let result = match opened.error() {
            Some((text, _)) => Err(text),
            None => Ok(self.read_all(fid)),
        };
        self.clunk_ok(fid);
        result
    }

    /// Everything below the directory `path`: each listed entry, walked to
    /// from the root, directories listed in turn, files read whole, depth
    /// first in listing order. A directory that cannot be listed fails the
    /// crawl (it was just listed by its parent).
    pub(crate) fn crawl(&mut self, path: &str) -> Vec<Crawled> {
        let mut out = Vec::new();
        self.crawl_into(path, &mut out);
        out
    }

    fn crawl_into(&mut self, path: &str, out: &mut Vec<Crawled>) {
        let count = self.msize - IOHDRSZ;
        let entries = self.try_list(path, CRAWL_FID, count).unwrap_or_else(|e| panic!("crawl: list {path}: {e}"));
        for entry in entries {
            let child = join_tree(path, &entry.name);
            if entry.mode & DMDIR != 0 {
                out.push(Crawled { path: child.clone(), entry, data: Ok(Vec::new()) });
                self.crawl_into(&child, out);
            } else if entry.name == "wait" && (child.starts_with("/active/") || child == "/usage/wait") {
                // A wait file is a stream whose reads park until what it
                // follows changes: a crawl stats it and does not read it.
                out.push(Crawled { path: child, entry, data: Ok(Vec::new()) });
            } else {
                let data = self.try_cat(&child, CRAWL_FID);
                out.push(Crawled { path: child, entry, data });
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Interop scripts (py9p, from the PyPI package p9fs).

/// The interpreter the interop scripts run under (`PYTHON`, else python3).
pub(crate) fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Is py9p importable? If not: fail on CI (`CI` set, where `.ci/run`
/// installs it), else say on stderr how to get it, and the test passes.
pub(crate) fn py9p_available() -> bool {
    let probe = Command::new(python()).args(["-B", "-c", "import py9p.py9p, p9fs"]).output();
    let ok = probe.as_ref().is_ok_and(|o| o.status.success());
    if !ok {
        let why = match &probe {
            Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
            Err(e) => format!("{}: {e}", python()),
        };
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but py9p cannot be imported ({why}); .ci/run should have run `pip install p9fs`"
        );
        // Straight to fd 2, past the test harness's capture, so a passing
        // run still says it skipped.
        let line = format!("interop: skipped: pip install p9fs (py9p cannot be imported: {})\n", why.trim());
        let _ = io::Write::write_all(&mut io::stderr(), line.as_bytes());
    }
    ok
}

impl Scratch {
    /// An empty directory to pass as `--proc`: /active then shows no
    /// process of the machine the suite runs on, so a crawl of `/` reads
    /// only what the test built.
    pub(crate) fn empty_proc(&self) -> String {
        let path = self.root.join("proc-empty");
        fs::create_dir_all(&path).unwrap();
        arg(&path).to_owned()
    }
}

impl Daemon {
    /// As `start_in`, with `env` added to the daemon's environment (the
    /// move tests give it a `ZMX_SESSION` of its own, which a move must not
    /// hand down to zmx).
    pub(crate) fn start_in_env(scratch: &Arc<Scratch>, args: &[&str], env: &[(&str, &str)]) -> Daemon {
        Daemon::start_in_limited(scratch, args, env, None)
    }

    /// As `start_in_env`, with the daemon's `RLIMIT_NOFILE` (soft and hard)
    /// set to `nofile` before it runs, when given: the daemon raises its soft
    /// limit to the hard one, so `nofile` is exactly the fds it may hold, and
    /// a test can run it out of them.
    pub(crate) fn start_in_limited(
        scratch: &Arc<Scratch>,
        args: &[&str],
        env: &[(&str, &str)],
        nofile: Option<u64>,
    ) -> Daemon {
        let scratch = scratch.clone();
        let sock = scratch.root.join("sock");
        let mut cmd = scratch.command();
        cmd.args(["--no-post", "--unix", arg(&sock)]).args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        if let Some(n) = nofile {
            // SAFETY: between fork and exec only setrlimit(2) is called, which
            // is async-signal-safe; lowering a limit needs no privilege.
            unsafe {
                cmd.pre_exec(move || {
                    let lim = libc::rlimit { rlim_cur: n, rlim_max: n };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        Daemon::launch(scratch, cmd, Ready::Unix(sock))
    }
}

// ---------------------------------------------------------------------------
// Running a daemon out of file descriptors (one started with
// `start_in_limited`): every Topen of a file holds an fd for its fid.

/// Is this Rerror the daemon saying it is out of descriptors: EMFILE's text
/// or ENFILE's (and, in 9P2000.u, the errno beside it)?
pub(crate) fn is_out_of_fds(text: &str, errno: u32, dialect: Dialect) -> bool {
    let errnos: &[u32] = match text {
        "Too many open files" => &[libc::EMFILE as u32],
        "Too many open files in system" => &[libc::ENFILE as u32],
        _ => return false,
    };
    match dialect {
        Dialect::P2000 => errno == 0,
        Dialect::P2000u | Dialect::L => errnos.contains(&errno),
    }
}

impl Conn {
    /// Open clones of `fid` (a walked, unopened file; a clone is a walk of
    /// no names, which touches no disk) as `first`, `first + 1`, ... until
    /// a Topen is refused: the fids left open, and the refusal (its fid
    /// clunked). Fails if `max` opens all succeed.
    pub(crate) fn open_until_refused(&mut self, fid: u32, first: u32, max: u32) -> (Vec<u32>, Reply) {
        let mut open = Vec::new();
        for newfid in first..first + max {
            let r = self.walk(fid, newfid, &[]);
            assert!(!r.is_error(), "a clone of fid {fid}: {r:?}");
            let r = self.open(newfid, OREAD);
            if r.is_error() {
                self.clunk_ok(newfid);
                return (open, r);
            }
            open.push(newfid);
        }
        panic!("{max} opens of fid {fid} all succeeded: the daemon never ran out of descriptors");
    }

    pub(crate) fn clunk_all(&mut self, fids: &[u32]) {
        for &fid in fids {
            self.clunk_ok(fid);
        }
    }
}

impl Daemon {
    /// Take the descriptors an exhausting open may have left (an open
    /// needs two at once, so one may be left over), with connections the
    /// daemon accepts, until it holds all `nofile`; the connections, for
    /// the caller to keep. Each is versioned, so its answer says it was
    /// accepted (and no Tversion deadline closes it). A connection made
    /// when none is left waits in the listen backlog instead.
    pub(crate) fn take_every_fd(&self, nofile: u64) -> Vec<Conn> {
        let mut held = Vec::new();
        while (self.fd_count() as u64) < nofile {
            assert!(
                held.len() < 4,
                "the daemon holds {} fds of {nofile} after {} more connections",
                self.fd_count(),
                held.len()
            );
            let mut c = self.connect();
            let r = c.version(SESSION_MSIZE, Dialect::P2000.version());
            assert!(matches!(r.msg(), Rmsg::Version { .. }), "{r:?}");
            held.push(c);
        }
        held
    }
}

// ---------------------------------------------------------------------------
// The real transcripts of ../shared/data, as a home.

const SHARED_DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/transcripts");

/// A home of `s` holding every real Claude Code transcript of
/// `../shared/data` as a session of its own (four projects) and every
/// codex one as a rollout, and the `--root` flags that serve it; `None`,
/// the test saying it skipped as `who`, when the data is absent.
pub(crate) fn real_home(s: &Scratch, who: &str) -> Option<[String; 4]> {
    let files = |sub: &str| -> Option<Vec<PathBuf>> {
        let Ok(rd) = fs::read_dir(Path::new(SHARED_DATA).join(sub)) else {
            eprintln!("{who}: skipped: {SHARED_DATA}/{sub} is absent");
            return None;
        };
        let mut v: Vec<PathBuf> =
            rd.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl")).collect();
        v.sort();
        Some(v)
    };
    let (claude, codex) = (files("claude")?, files("codex")?);
    for (i, f) in claude.iter().enumerate() {
        let sid = format!("{i:08x}-0000-4000-8000-{i:012x}");
        s.home_file(&format!(".claude/projects/-real-p{}/{sid}.jsonl", i % 4), &fs::read(f).unwrap());
    }
    for (i, f) in codex.iter().enumerate() {
        let id = format!("019ad000-0000-7000-8000-{i:012x}");
        let day = format!(".codex/sessions/2026/11/{:02}", 1 + i % 28);
        s.home_file(&format!("{day}/rollout-2026-11-01T00-00-00-{id}.jsonl"), &fs::read(f).unwrap());
    }
    Some([
        "--root".into(),
        format!("claude={}", s.home.join(".claude").display()),
        "--root".into(),
        format!("codex={}", s.home.join(".codex").display()),
    ])
}
