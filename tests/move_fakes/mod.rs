//! Fakes for the move tests (`tests/move_*.rs`): a world in which writing
//! a name into `/active/<h>/<pid>/zmx` can be watched from outside.
//!
//! * **A fake agent** is a copy of `/bin/sleep` named after its harness
//!   (`/active` classifies by `argv[0]`'s basename), started by the test in
//!   a scratch work directory with `ZMX_SESSION=old`. A claude one gets the
//!   registry record and transcript that resolve its session (`s-1`) by the
//!   registry route. It can be started ignoring SIGTERM (SIG_IGN survives
//!   exec), to make the daemon escalate to SIGKILL or give up.
//! * **A fake zmx** is a python script the daemon runs as `--zmx`. It
//!   records its argv, cwd and environment to `zmx.record` (atomically: the
//!   test sees all of it or none), then, unless told never to post, forks a
//!   detached child that binds and listens on
//!   `$XDG_RUNTIME_DIR/9p/zmx/<name>` — zmx's self-post — and exits at
//!   once. In `Resume` mode the child first starts a resumed agent (the
//!   sleep copy with `argv[0]` `claude` and `ZMX_SESSION=<name>`), as a
//!   real `zmx run <name> -d claude --resume <sid>` would. In `Foreground`
//!   mode zmx posts the socket itself and stays, the daemon's child, until
//!   the test releases it (`World::release_zmx`), then exits.
//!
//! Everything started is stopped on drop, panicking or not: an `Agent` is
//! the test's child and is killed and reaped; what the fake zmx detaches is
//! not (it is reparented away from the daemon), so its pids are written to
//! `detached.pids` before the socket is posted, and killed from there.
//!
//! Nothing here sleeps to synchronise: every wait is `poll` with a
//! deadline.

#![allow(dead_code)]

use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use crate::common::*;

/// A refusal or failure of a move: the text a client reads (its errno's
/// string, which several share) and the reason the daemon logs, which tells
/// them apart.
pub(crate) struct Refusal {
    pub text: &'static str,
    pub logged: &'static str,
}

const EPERM: &str = "Operation not permitted";
pub(crate) const ILLEGAL_NAME: Refusal =
    Refusal { text: "Invalid argument", logged: "a zmx session name is 1 to 64 bytes of A-Z a-z 0-9 . _ -" };
pub(crate) const NO_SESSION: Refusal = Refusal { text: EPERM, logged: "no session resolved for this agent" };
pub(crate) const NO_CWD: Refusal = Refusal { text: EPERM, logged: "the agent's cwd is unknown" };
pub(crate) const NO_RESUME_FORM: Refusal = Refusal { text: EPERM, logged: "this harness has no resume form" };
pub(crate) const NOTHING_TO_RESUME: Refusal =
    Refusal { text: EPERM, logged: "nothing to resume: the agent has no session id" };
pub(crate) const NAME_TAKEN: Refusal = Refusal { text: "File exists", logged: "a live zmx session holds that name" };
pub(crate) const MOVE_BUSY: Refusal =
    Refusal { text: "Device or resource busy", logged: "a move of this agent is already in progress" };
pub(crate) const NOT_GONE: Refusal =
    Refusal { text: "i/o error", logged: "the agent did not exit after SIGTERM and SIGKILL" };
pub(crate) const NO_SPAWN: Refusal = Refusal { text: "i/o error", logged: "zmx could not be started" };
pub(crate) const NO_POST: Refusal =
    Refusal { text: "i/o error", logged: "zmx did not post the session before the deadline" };

/// The move was answered `refusal`'s text, and the daemon logged its reason.
pub(crate) fn assert_move_error(d: &Daemon, r: &Reply, refusal: &Refusal) {
    r.assert_error(refusal.text);
    d.wait_stderr(refusal.logged, REPLY_DEADLINE);
}

/// The session id every fake claude's registry record names.
pub(crate) const SESSION_ID: &str = "s-1";
/// The `ZMX_SESSION` every fake agent starts with.
pub(crate) const OLD_ZMX: &str = "old";
/// The `ZMX_SESSION` the daemon itself runs with: a move must not pass it
/// (nor any other) down to zmx.
pub(crate) const DAEMON_ZMX: &str = "daemon-own";
/// How long a fake agent sleeps if nothing stops it; far past any test.
const AGENT_SLEEP_SECS: &str = "600";
/// How long a move may take, at most, in a test whose clocks are the
/// defaults or shorter (the defaults give up at 12 s, plus the post's 10 s).
pub(crate) const MOVE_DEADLINE: Duration = Duration::from_secs(30);
/// How long a process is given to show an effect (exit, reap, post).
pub(crate) const EFFECT_DEADLINE: Duration = Duration::from_secs(10);

/// What the fake zmx does after recording itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Zmx {
    /// Posts the session's socket (from a detached child) and exits.
    Post,
    /// Starts a resumed fake claude in the session, posts, and exits.
    Resume,
    /// Exits without posting.
    Never,
    /// Writes its pid to `zmx.pid`, posts the session's socket itself and
    /// stays in the foreground (the daemon's child, after the move's reply)
    /// until the test releases it, then exits.
    Foreground,
}

/// A scratch world furnished for moves: the daemon's HOME and
/// XDG_RUNTIME_DIR (with `9p/zmx/`), a work directory for the agents, the
/// fake binaries, and the fake zmx's record.
pub(crate) struct World {
    pub scratch: Arc<Scratch>,
    /// The agents' cwd (canonical: it is what /proc/<pid>/cwd reads).
    pub work: PathBuf,
    /// `$XDG_RUNTIME_DIR/9p/zmx`, the zmx session registry.
    pub zmx_dir: PathBuf,
    /// The fake zmx script.
    pub zmx: PathBuf,
    /// Where the fake zmx records its argv, cwd and environment.
    pub zmx_log: PathBuf,
    bin: PathBuf,
    detached: PathBuf,
    /// Where a `Foreground` zmx writes its pid, and the file whose
    /// appearance releases it.
    zmx_pid: PathBuf,
    zmx_release: PathBuf,
}

impl World {
    pub(crate) fn new(mode: Zmx) -> World {
        let scratch = Scratch::new();
        let root = fs::canonicalize(&scratch.root).unwrap();
        let work = root.join("work");
        let bin = root.join("bin");
        let zmx_dir = scratch.runtime.join("9p").join("zmx");
        for d in [&work, &bin, &zmx_dir] {
            fs::create_dir_all(d).unwrap_or_else(|e| panic!("mkdir {}: {e}", d.display()));
        }
        for harness in ["claude", "dsh", "hermes"] {
            fs::copy("/bin/sleep", bin.join(harness)).expect("copy /bin/sleep");
        }
        let zmx_log = root.join("zmx.record");
        let detached = root.join("detached.pids");
        let (zmx_pid, zmx_release) = (root.join("zmx.pid"), root.join("zmx.release"));
        let zmx = bin.join("zmx");
        let paths = FakePaths { log: &zmx_log, detached: &detached, claude: &bin.join("claude"), pid: &zmx_pid };
        // Perl first (Debian's perl-base is essential), which changes
        // neither the signal mask nor SIGPIPE (a shell resets the mask,
        // python ignores SIGPIPE), to record the state zmx started with.
        let py = bin.join("zmx.py");
        fs::write(&py, fake_zmx(mode, &paths, &zmx_release)).unwrap();
        let signals = root.join("zmx.signals");
        let perl = format!(
            "#!/usr/bin/perl\nopen(my $in, '<', '/proc/self/status') or die;\n\
             open(my $out, '>', '{s}.tmp') or die;\nprint $out grep {{ /^Sig/ }} <$in>;\nclose($out);\n\
             rename('{s}.tmp', '{s}') or die;\nexec('python3', '{py}', @ARGV) or die;\n",
            s = arg(&signals),
            py = arg(&py)
        );
        fs::write(&zmx, perl).unwrap();
        fs::set_permissions(&zmx, fs::Permissions::from_mode(0o755)).unwrap();
        World { scratch, work, zmx_dir, zmx, zmx_log, bin, detached, zmx_pid, zmx_release }
    }

    /// The daemon over the real /proc with moves allowed, the fake zmx,
    /// and `extra` (clocks), running with a `ZMX_SESSION` of its own.
    pub(crate) fn daemon(&self, extra: &[&str]) -> Daemon {
        let mut args = vec!["--proc", "/proc", "--allow-move", "--zmx", arg(&self.zmx)];
        args.extend_from_slice(extra);
        Daemon::start_in_env(&self.scratch, &args, &[("ZMX_SESSION", DAEMON_ZMX)])
    }

    /// As `daemon`, with `RLIMIT_NOFILE` lowered to `nofile` (soft and hard).
    pub(crate) fn daemon_limited(&self, extra: &[&str], nofile: u64) -> Daemon {
        let mut args = vec!["--proc", "/proc", "--allow-move", "--zmx", arg(&self.zmx)];
        args.extend_from_slice(extra);
        Daemon::start_in_limited(&self.scratch, &args, &[("ZMX_SESSION", DAEMON_ZMX)], Some(nofile))
    }

    /// The same daemon without `--allow-move`.
    pub(crate) fn daemon_read_only(&self) -> Daemon {
        let args = ["--proc", "/proc", "--zmx", arg(&self.zmx)];
        Daemon::start_in_env(&self.scratch, &args, &[("ZMX_SESSION", DAEMON_ZMX)])
    }

    /// A fake claude whose session resolves through its registry record.
    pub(crate) fn claude(&self) -> Agent {
        let agent = self.agent("claude", false);
        self.register(&agent);
        agent
    }

    /// A fake claude that ignores SIGTERM, with its registry record.
    pub(crate) fn stubborn_claude(&self) -> Agent {
        let agent = self.agent("claude", true);
        self.register(&agent);
        agent
    }

    /// A fake agent of `harness` (a copy of sleep under that name) in the
    /// work directory with `ZMX_SESSION=old`; ignoring SIGTERM if asked.
    pub(crate) fn agent(&self, harness: &str, ignore_term: bool) -> Agent {
        self.agent_with(harness, ignore_term, None)
    }

    /// As `agent`, with `fd3` open in the agent as its fd 3 (a dsh holds
    /// its session file open; that is how its session is found).
    pub(crate) fn agent_with(&self, harness: &str, ignore_term: bool, fd3: Option<OwnedFd>) -> Agent {
        let mut cmd = Command::new(self.bin.join(harness));
        cmd.arg(AGENT_SLEEP_SECS)
            .current_dir(&self.work)
            .env_clear()
            .env("ZMX_SESSION", OLD_ZMX)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let raw = fd3.as_ref().map(|f| f.as_raw_fd());
        // SAFETY: between fork and exec only async-signal-safe calls are
        // made (signal, dup2, fcntl), on a descriptor the parent keeps open
        // until spawn returns.
        unsafe {
            cmd.pre_exec(move || {
                if ignore_term && libc::signal(libc::SIGTERM, libc::SIG_IGN) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(raw) = raw {
                    let ok = if raw == 3 {
                        let flags = libc::fcntl(3, libc::F_GETFD);
                        flags >= 0 && libc::fcntl(3, libc::F_SETFD, flags & !libc::FD_CLOEXEC) >= 0
                    } else {
                        libc::dup2(raw, 3) >= 0
                    };
                    if !ok {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        // spawn returns once exec has succeeded, so /proc/<pid>/cmdline is
        // already the fake's.
        let child = spawn_fresh(&mut cmd);
        drop(fd3);
        Agent { pid: child.id(), child, status: None }
    }

    /// The registry record and transcript that resolve a claude's
    /// session: `~/.claude/sessions/<pid>.json` naming `s-1`, the work dir
    /// and the process's starttime, and a transcript whose first record
    /// carries the same cwd.
    pub(crate) fn register(&self, agent: &Agent) {
        let cwd = arg(&self.work);
        let record = format!(
            r#"{{"pid":{},"sessionId":"{SESSION_ID}","cwd":"{cwd}","procStart":"{}","status":"idle"}}"#,
            agent.pid,
            agent.starttime()
        );
        self.scratch.home_file(&format!(".claude/sessions/{}.json", agent.pid), record.as_bytes());
        self.transcript();
    }

    /// The claude transcript of `s-1`, under the project dir of the work
    /// directory (its non-alphanumerics as `-`).
    pub(crate) fn transcript(&self) -> PathBuf {
        let cwd = arg(&self.work);
        let project: String = cwd.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        let first = format!(
            r#"{{"type":"user","cwd":"{cwd}","sessionId":"{SESSION_ID}","message":{{"role":"user","content":"hi"}}}}"#
        );
        self.scratch
            .home_file(&format!(".claude/projects/{project}/{SESSION_ID}.jsonl"), format!("{first}\n").as_bytes())
    }

    /// The fake zmx's record of itself, once it has run.
    pub(crate) fn zmx_record(&self) -> Option<ZmxRecord> {
        let text = fs::read_to_string(&self.zmx_log).ok()?;
        Some(ZmxRecord::parse(&text))
    }

    /// The signals zmx started with blocked and ignored (`SigBlk`,
    /// `SigIgn` of its /proc status, bit n-1 for signal n), once it ran.
    pub(crate) fn zmx_signals(&self) -> (u64, u64) {
        let path = self.zmx_log.with_extension("signals");
        let text =
            poll(EFFECT_DEADLINE, || fs::read_to_string(&path).ok()).expect("the fake zmx never recorded its signals");
        let mask = |name: &str| {
            let line = text.lines().find_map(|l| l.strip_prefix(name)).unwrap_or_else(|| panic!("no {name} in {text}"));
            u64::from_str_radix(line.trim(), 16).unwrap()
        };
        (mask("SigBlk:"), mask("SigIgn:"))
    }

    /// Wait for the fake zmx to have run; its record.
    pub(crate) fn wait_zmx_record(&self) -> ZmxRecord {
        poll(EFFECT_DEADLINE, || self.zmx_record()).unwrap_or_else(|| {
            let err = fs::read_to_string(self.zmx_log.with_extension("err")).unwrap_or_default();
            panic!("the fake zmx never ran (or never finished recording itself); its errors: {err}")
        })
    }

    /// The session socket `name` would be posted at.
    pub(crate) fn session_socket(&self, name: &str) -> PathBuf {
        self.zmx_dir.join(name)
    }

    /// Wait for a session socket to be posted at `name`.
    pub(crate) fn wait_posted(&self, name: &str) {
        let path = self.session_socket(name);
        poll(EFFECT_DEADLINE, || is_socket(&path).then_some(()))
            .unwrap_or_else(|| panic!("{} was never posted", path.display()));
    }

    /// The pids the fake zmx detached (poster, resumed agent), in the order
    /// it started them.
    pub(crate) fn detached_pids(&self) -> Vec<u32> {
        fs::read_to_string(&self.detached).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
    }

    /// The pid of a `Foreground` zmx, once it has written it.
    pub(crate) fn zmx_pid(&self) -> u32 {
        poll(EFFECT_DEADLINE, || fs::read_to_string(&self.zmx_pid).ok()?.trim().parse().ok())
            .expect("the fake zmx never wrote its pid")
    }

    /// Let a `Foreground` zmx exit.
    pub(crate) fn release_zmx(&self) {
        fs::write(&self.zmx_release, b"go\n").unwrap();
    }

    /// The pid of the resumed agent a `Resume` fake zmx started.
    pub(crate) fn resumed_pid(&self) -> u32 {
        poll(EFFECT_DEADLINE, || fs::read_to_string(self.detached.with_extension("resumed")).ok()?.trim().parse().ok())
            .expect("the fake zmx never started the resumed agent")
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // Not our children (the fake zmx detached them): kill each, if it is
        // still the process the fake zmx started (its environ names this
        // world), and let init reap it.
        let marker = arg(&self.scratch.runtime).as_bytes().to_vec();
        for pid in self.detached_pids() {
            let environ = fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            if contains(&environ, &marker) {
                // SAFETY: kill(2) of a pid whose environment names this
                // world's runtime dir: the process the fake zmx detached.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        }
    }
}

/// A fake agent: the test's child, killed and reaped on drop unless the
/// test reaped it first.
pub(crate) struct Agent {
    child: Child,
    pub pid: u32,
    status: Option<ExitStatus>,
}

impl Agent {
    /// Field 22 of /proc/<pid>/stat: when the process started, in ticks.
    pub(crate) fn starttime(&self) -> u64 {
        stat_fields(self.pid).expect("the agent's stat")[19].parse().unwrap()
    }

    /// Has it exited (reaping it if so)?
    pub(crate) fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().expect("try_wait");
        }
        self.status
    }

    /// Wait (polling) for the agent to exit, and reap it.
    pub(crate) fn wait_exit(&mut self, deadline: Duration) -> ExitStatus {
        poll(deadline, || self.try_status())
            .unwrap_or_else(|| panic!("the agent (pid {}) is still running after {deadline:?}", self.pid))
    }

    /// The signal that ended the agent, after waiting for it.
    pub(crate) fn wait_killed_by(&mut self) -> i32 {
        let status = self.wait_exit(EFFECT_DEADLINE);
        status.signal().unwrap_or_else(|| panic!("the agent exited by itself ({status}), not by a signal"))
    }

    /// The agent runs and nothing is on its way to it: not exited, not a
    /// zombie, no signal pending. (A signal the daemon sent before it
    /// answered is pending or has already acted by now: kill(2) queues it
    /// before it returns.)
    pub(crate) fn assert_untouched(&mut self) {
        assert_eq!(self.try_status(), None, "the agent (pid {}) was ended", self.pid);
        let status = fs::read_to_string(format!("/proc/{}/status", self.pid)).expect("the agent's status");
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
                .unwrap_or_else(|| panic!("no {name} in status"))
                .to_owned()
        };
        let state = field("State:");
        assert!(!state.starts_with('Z') && !state.starts_with('X'), "the agent is {state}");
        assert_eq!(field("SigPnd:"), "0000000000000000", "a signal is pending on the agent");
        assert_eq!(field("ShdPnd:"), "0000000000000000", "a signal is pending on the agent");
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if self.try_status().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The fields of /proc/<pid>/stat after the command (field 3, the state,
/// is index 0).
pub(crate) fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// The daemon's children now: (pid, state).
pub(crate) fn children_of(parent: u32) -> Vec<(u32, char)> {
    let mut out = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Some(fields) = stat_fields(pid) else { continue };
        if fields[1].parse::<u32>().ok() == Some(parent) {
            out.push((pid, fields[0].chars().next().unwrap_or('?')));
        }
    }
    out
}

/// Poll until the daemon has no zombie child (the zmx it ran is reaped);
/// fail with the zombies at the deadline.
pub(crate) fn assert_no_zombie(daemon: &Daemon) {
    let zombies = |d: &Daemon| children_of(d.pid).into_iter().filter(|(_, s)| *s == 'Z').collect::<Vec<_>>();
    if poll(EFFECT_DEADLINE, || zombies(daemon).is_empty().then_some(())).is_none() {
        panic!("the daemon left zombie children: {:?}", zombies(daemon));
    }
}

/// Is the daemon holding a pidfd on `pid`? (It pins the agent with one
/// while it waits for the agent to exit: the move is under way.)
pub(crate) fn holds_pidfd_on(daemon: &Daemon, pid: u32) -> bool {
    let Ok(fds) = fs::read_dir(format!("/proc/{}/fd", daemon.pid)) else { return false };
    for fd in fds.flatten() {
        let link = fs::read_link(fd.path()).unwrap_or_default();
        if !arg(&link).contains("pidfd") {
            continue;
        }
        let info = fs::read_to_string(format!("/proc/{}/fdinfo/{}", daemon.pid, fd.file_name().to_string_lossy()))
            .unwrap_or_default();
        if info.lines().any(|l| l.strip_prefix("Pid:").map(str::trim) == Some(&pid.to_string())) {
            return true;
        }
    }
    false
}

/// Wait until the daemon has the agent pinned: the move is waiting for it.
pub(crate) fn wait_move_waiting(daemon: &Daemon, agent: &Agent) {
    poll(EFFECT_DEADLINE, || holds_pidfd_on(daemon, agent.pid).then_some(()))
        .unwrap_or_else(|| panic!("the daemon never pinned the agent (pid {}) with a pidfd", agent.pid));
}

/// The tree path of an agent's directory.
pub(crate) fn agent_dir(harness: &str, agent: &Agent) -> String {
    format!("/active/{harness}/{}", agent.pid)
}

/// Walk a fresh fid to `<agent>/zmx` and open it for writing.
pub(crate) fn open_zmx(c: &mut Conn, harness: &str, agent: &Agent, fid: u32) {
    let path = format!("{}/zmx", agent_dir(harness, agent));
    c.walk_ok(ROOT, fid, &tree_names(&path));
    c.open_ok(fid, OWRITE);
}

/// Write `data` through `fid` on a fresh tag (the reply is the caller's).
pub(crate) fn send_write(c: &mut Conn, fid: u32, data: &[u8]) -> u16 {
    let tag = c.tag();
    c.send(tag, &Tmsg::Write { fid, offset: 0, data });
    tag
}

/// Open `<agent>/zmx` for writing, write `data`, and wait (up to
/// `MOVE_DEADLINE`) for the answer.
pub(crate) fn move_agent(c: &mut Conn, harness: &str, agent: &Agent, data: &[u8]) -> Reply {
    open_zmx(c, harness, agent, 1);
    let tag = send_write(c, 1, data);
    c.set_read_timeout(MOVE_DEADLINE);
    let r = c.recv();
    c.set_read_timeout(REPLY_DEADLINE);
    assert_eq!(r.tag(), tag, "reply on the wrong tag: {r:?}");
    c.clunk_ok(1);
    r
}

/// Assert an Rwrite of `count`.
pub(crate) fn assert_written(r: &Reply, count: usize) {
    assert_eq!(r.msg(), Rmsg::Write { count: count as u32 }, "{r:?}");
}

/// The names `/active/<harness>` lists now (a listing rescans /proc).
pub(crate) fn listed(c: &mut Conn, harness: &str) -> Vec<String> {
    names(&c.list(&format!("/active/{harness}"), 90, 8192))
}

/// What the fake zmx recorded: its argv (after argv[0]), cwd and
/// environment.
#[derive(Debug)]
pub(crate) struct ZmxRecord {
    pub argv: Vec<String>,
    pub cwd: String,
    pub env: Vec<(String, String)>,
}

impl ZmxRecord {
    /// The record is three parts split by \x01: the argv and the
    /// environment NUL-separated (as /proc writes them), the cwd between.
    fn parse(text: &str) -> ZmxRecord {
        let parts: Vec<&str> = text.split('\x01').collect();
        assert_eq!(parts.len(), 3, "a whole record: {text:?}");
        let list = |p: &str| p.split('\0').filter(|s| !s.is_empty()).map(str::to_owned).collect::<Vec<_>>();
        let env = list(parts[2])
            .into_iter()
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) => (k.to_owned(), v.to_owned()),
                None => (kv, String::new()),
            })
            .collect();
        ZmxRecord { argv: list(parts[0]), cwd: parts[1].to_owned(), env }
    }

    pub(crate) fn env(&self, key: &str) -> Option<&str> {
        self.env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// Where the fake zmx writes what it did.
struct FakePaths<'a> {
    log: &'a Path,
    detached: &'a Path,
    claude: &'a Path,
    pid: &'a Path,
}

/// How long a `Foreground` zmx waits to be released before it exits
/// anyway, so a failed test leaves nothing behind for long.
const FOREGROUND_SECS: u32 = 60;

/// The fake zmx: python, run as `zmx run <name> -d <argv...>`.
fn fake_zmx(mode: Zmx, paths: &FakePaths, release: &Path) -> String {
    let mode = match mode {
        Zmx::Post => "post",
        Zmx::Resume => "resume",
        Zmx::Never => "never",
        Zmx::Foreground => "foreground",
    };
    let FakePaths { log, detached, claude, pid } = paths;
    format!(
        r#"#!/usr/bin/env python3
# A fake zmx for the move tests: record, then (unless MODE is never) post
# $XDG_RUNTIME_DIR/9p/zmx/<name> from a detached child, and exit at once;
# in MODE foreground, post it from this process and stay until released.
import os, socket, sys, time, traceback
LOG = {log:?}
DETACHED = {detached:?}
CLAUDE = {claude:?}
MODE = {mode:?}
PID = {pid:?}
RELEASE = {release:?}
def listen(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(8)
    return s
try:
    argv = "\0".join(sys.argv[1:])
    env = "\0".join(k + "=" + v for k, v in sorted(os.environ.items()))
    with open(LOG + ".tmp", "w") as f:
        f.write(argv + "\x01" + os.getcwd() + "\x01" + env)
    os.rename(LOG + ".tmp", LOG)
    if MODE == "never":
        sys.exit(0)
    name = sys.argv[2]
    path = os.path.join(os.environ["XDG_RUNTIME_DIR"], "9p", "zmx", name)
    if MODE == "foreground":
        # Killed by the test's World if it is still here at the end.
        with open(DETACHED, "a") as f:
            f.write("%d\n" % os.getpid())
        with open(PID + ".tmp", "w") as f:
            f.write("%d\n" % os.getpid())
        os.rename(PID + ".tmp", PID)
        s = listen(path)
        end = time.time() + {FOREGROUND_SECS}
        while time.time() < end and not os.path.exists(RELEASE):
            time.sleep(0.02)
        sys.exit(0)
    if os.fork() != 0:
        sys.exit(0)
    os.setsid()
    with open(DETACHED, "a") as f:
        f.write("%d\n" % os.getpid())
    if MODE == "resume":
        # The pipe is close-on-exec: its EOF says the resumed agent has
        # exec'd, so it is a claude in /proc before the session is posted.
        r, wr = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            env = dict(os.environ, ZMX_SESSION=name)
            os.execve(CLAUDE, ["claude", "600"], env)
        os.close(wr)
        os.read(r, 1)
        os.close(r)
        with open(DETACHED, "a") as f:
            f.write("%d\n" % pid)
        with open(DETACHED + ".tmp", "w") as f:
            f.write("%d\n" % pid)
        os.rename(DETACHED + ".tmp", os.path.splitext(DETACHED)[0] + ".resumed")
    s = listen(path)
    # Keep the session alive while the test looks (killed at its end).
    end = time.time() + 120
    while time.time() < end and os.path.exists(path):
        time.sleep(0.2)
except SystemExit:
    raise
except BaseException:
    with open(os.path.splitext(LOG)[0] + ".err", "a") as f:
        f.write(traceback.format_exc())
    sys.exit(1)
"#
    )
}
