//! The move as a parked write: refuse before destroying anything, then
//! SIGTERM, SIGKILL after `--move-kill-after`, give up at
//! `--move-give-up`; spawn `zmx run <name> -d <resume argv>` in the agent's
//! cwd; answer the write when `<zmx registry>/<name>` appears, or an error
//! at `--move-post-deadline`. Every wait is an operation on the ring (a
//! connect, a poll of a pidfd, a timeout, a statx), so the daemon serves
//! everyone else meanwhile.
//!
//! The move is pinned: a Tflush or a hang-up forgets the reply (Rflush
//! answers at once), but the move goes on to the end, and its child is
//! reaped when it exits — no zombie is left behind.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use crate::errors::Error;
use crate::facts::Root;
use crate::moves;
use crate::ring::Sub;
use crate::tree::{Backing, HARNESSES};

use super::job::{Job, Reply, Step};
use super::probe::{Kind, Probe, Target};
use super::{Server, Token};

/// How often the zmx registry is looked at for the new session's socket.
const POST_TICK_NANOS: u64 = 20_000_000;

/// Where a move is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Asking the registry whether a live session holds the name.
    NameProbe,
    /// Reading the agent's stat, to be sure the pidfd is the agent.
    Identity,
    /// SIGTERM sent; waiting for the exit (SIGKILL at the kill timer).
    Ending,
    /// zmx spawned; looking for its post every tick.
    Posting,
    Done,
}

/// What a move's ring operation was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveOp {
    Connect,
    Exited,
    KillTimer,
    GiveUp,
    Tick,
    PostConnect,
    ChildExited,
}

pub struct Move {
    pub slot: u32,
    pub gen: u32,
    pub count: u32,
    pub stage: Stage,
    argv: Vec<Vec<u8>>,
    name: Vec<u8>,
    cwd: Vec<u8>,
    pid: u32,
    starttime: u64,
    pidfd: Option<OwnedFd>,
    child: Option<(Child, OwnedFd)>,
    post_deadline: Option<Instant>,
}

impl Server {
    /// A write to `zmx` arrived: check what can be checked at once, then
    /// park the move. A refusal is logged with its reason.
    pub(super) fn begin_move(&mut self, idx: usize, tag: u16, slot: u32, gen: u32, data: &[u8]) -> Result<(), Error> {
        let begun = self.check_and_park_move(idx, tag, slot, gen, data);
        if let Err(e) = begun {
            log::warn!("move to zmx session \"{}\" refused: {}", data.trim_ascii_end().escape_ascii(), why(e));
        }
        begun
    }

    fn check_and_park_move(&mut self, idx: usize, tag: u16, slot: u32, gen: u32, data: &[u8]) -> Result<(), Error> {
        let name = moves::parse_name(data)?;
        let agent = self.tree.agents.get(slot, gen).ok_or(Error::NotFound)?;
        let session = agent.session.clone().filter(|s| !s.id.is_empty() || s.via == "none").ok_or(Error::NoSession)?;
        let found = agent.found;
        let harness = HARNESSES[found.harness as usize];
        let cwd = match self.readlink(Root::Proc, format!("{}/cwd", found.pid).as_bytes()) {
            Ok(crate::facts::Fact::Link(l)) => l,
            // The process is gone (or a corpse): the entry is stale.
            Err(libc::ENOENT | libc::ESRCH) => return Err(Error::NotFound),
            _ => return Err(Error::NoCwd),
        };
        let transcript = self.transcript_path(found.harness, session.transcript.as_deref());
        let resume = moves::resume_argv(harness, &session.id, transcript.as_deref())?;
        if self.moving.contains(&(slot, gen)) {
            return Err(Error::MoveBusy);
        }
        let socket = self.zmx_socket(name).ok_or(Error::IllegalName)?;
        let mv = Move {
            slot,
            gen,
            count: data.len() as u32,
            stage: Stage::NameProbe,
            argv: moves::zmx_argv(name, resume),
            name: name.to_vec(),
            cwd,
            pid: found.pid,
            starttime: found.starttime,
            pidfd: None,
            child: None,
            post_deadline: None,
        };
        self.moving.insert((slot, gen));
        let key = self.insert_parked(idx, tag, Job::Move(Box::new(mv)), true);
        let fd = unix_socket().map_err(|_| Error::Io)?;
        self.move_submit(key, MoveOp::Connect, Sub::Connect { fd, path: socket });
        Ok(())
    }

    fn move_submit(&mut self, key: usize, op: MoveOp, sub: Sub) {
        let req = &mut self.reqs[key];
        req.in_flight += 1;
        self.ring.submit(Token::Move(key, req.gen, op), sub);
    }

    /// The registry socket a session named `name` posts: refused when its
    /// path would not fit a Unix address.
    fn zmx_socket(&self, name: &[u8]) -> Option<Vec<u8>> {
        let mut path = self.cfg.zmx_dir.as_os_str().as_bytes().to_vec();
        path.push(b'/');
        path.extend_from_slice(name);
        (path.len() < 108).then_some(path)
    }

    /// The transcript's absolute path (omp resumes from it).
    fn transcript_path(&self, harness: u8, rel: Option<&[u8]>) -> Option<Vec<u8>> {
        let mut path = self.tree.harness_base(harness)?.as_bytes().to_vec();
        path.push(b'/');
        path.extend_from_slice(rel?);
        Some(path)
    }

    /// A completion of one of a move's operations.
    pub(super) fn on_move(&mut self, key: usize, gen: u32, op: MoveOp, result: i32) {
        let Some(req) = self.reqs.get_mut(key).filter(|r| r.gen == gen) else { return };
        req.in_flight -= 1;
        let Job::Move(mv) = &mut req.job else { return };
        let stage = mv.stage;
        let step = match (op, stage) {
            (MoveOp::Connect, Stage::NameProbe) if result == 0 => Some(Err(Error::NameTaken)),
            (MoveOp::Connect, Stage::NameProbe) => self.move_identity(key),
            (MoveOp::Exited, Stage::Ending) => self.move_spawn(key),
            (MoveOp::KillTimer, Stage::Ending) => {
                self.move_signal(key, libc::SIGKILL);
                None
            }
            (MoveOp::GiveUp, Stage::Ending) => Some(Err(Error::MoveNotGone)),
            (MoveOp::Tick, Stage::Posting) => self.move_tick(key),
            (MoveOp::PostConnect, Stage::Posting) => self.move_post_answered(key, result == 0),
            (MoveOp::ChildExited, _) => {
                self.move_reap(key);
                None
            }
            _ => None,
        };
        if let Some(result) = step {
            self.move_end(key, result);
        }
        self.reap(key);
    }

    /// Pin the process with a pidfd, then read its stat: only a process
    /// whose starttime is the agent's is signalled.
    fn move_identity(&mut self, key: usize) -> Option<Result<Reply, Error>> {
        let Job::Move(mv) = &mut self.reqs[key].job else { unreachable!() };
        let pid = mv.pid;
        match pidfd_open(pid) {
            Ok(fd) => mv.pidfd = Some(fd),
            // The agent has already exited: nothing to kill, resume it.
            Err(libc::ESRCH) => return self.move_spawn(key),
            Err(_) => return Some(Err(Error::Io)),
        }
        mv.stage = Stage::Identity;
        let rel = CString::new(format!("{pid}/stat")).expect("no NUL");
        let backing = Backing { base: self.tree.proc_base().clone(), rel };
        let req = &mut self.reqs[key];
        req.probes = vec![Probe::new(Target::Beneath(backing), Kind::Slurp(4096))];
        let gen = req.gen;
        req.probes[0].start(&mut self.ring, Token::Probe(key, gen, 0));
        req.in_flight += 1;
        None
    }

    /// The stat is back: same process → SIGTERM and start the clocks.
    pub(super) fn move_identity_read(&mut self, key: usize, stat: &[u8]) -> Step {
        let Job::Move(mv) = &mut self.reqs[key].job else { unreachable!() };
        if !crate::active::proc::is_same_process(mv.starttime, stat) {
            // The pid is another process now, or a corpse: the agent is gone.
            mv.pidfd = None;
            return match self.move_spawn(key) {
                Some(r) => self.move_end_step(key, r),
                None => Step::Wait,
            };
        }
        mv.stage = Stage::Ending;
        let fd = mv.pidfd.as_ref().map(|f| f.as_raw_fd()).expect("pinned above");
        self.move_signal(key, libc::SIGTERM);
        let (kill, give_up) = (self.cfg.move_kill_after.as_nanos() as u64, self.cfg.move_give_up.as_nanos() as u64);
        self.move_submit(key, MoveOp::Exited, Sub::PollIn { fd });
        self.move_submit(key, MoveOp::KillTimer, Sub::Timeout { nanos: kill });
        self.move_submit(key, MoveOp::GiveUp, Sub::Timeout { nanos: give_up });
        Step::Wait
    }

    fn move_signal(&mut self, key: usize, sig: i32) {
        let Job::Move(mv) = &self.reqs[key].job else { return };
        if let Some(fd) = &mv.pidfd {
            let signal = crate::sys::Signal::from_named_raw(sig).expect("SIGTERM or SIGKILL");
            if let Err(e) = crate::sys::pidfd_send_signal(fd, signal) {
                log::debug!("move: signal {sig}: {e}");
            }
        }
    }

    /// The agent is gone: spawn zmx with the fixed argv, in its cwd,
    /// without ZMX_SESSION.
    fn move_spawn(&mut self, key: usize) -> Option<Result<Reply, Error>> {
        let Job::Move(mv) = &mut self.reqs[key].job else { unreachable!() };
        mv.pidfd = None;
        let mut cmd = Command::new(&self.cfg.zmx);
        cmd.args(mv.argv.iter().map(|a| std::ffi::OsStr::from_bytes(a)))
            .current_dir(std::ffi::OsStr::from_bytes(&mv.cwd))
            .env_remove("ZMX_SESSION")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                log::warn!("move: spawning {}: {e}", self.cfg.zmx.display());
                return Some(Err(Error::MoveSpawn));
            }
        };
        // An unreaped child's pid cannot be reused, so this pidfd is it.
        let Ok(pidfd) = pidfd_open(child.id()) else { return Some(Err(Error::MoveSpawn)) };
        let fd = pidfd.as_raw_fd();
        mv.child = Some((child, pidfd));
        mv.stage = Stage::Posting;
        mv.post_deadline = Some(Instant::now() + self.cfg.move_post_deadline);
        self.move_submit(key, MoveOp::ChildExited, Sub::PollIn { fd });
        self.move_submit(key, MoveOp::Tick, Sub::Timeout { nanos: POST_TICK_NANOS });
        None
    }

    /// A tick: does the session's socket answer a connect yet? A socket
    /// file alone is not a post — a stale one may lie there — so the post
    /// is confirmed the way the name check refused a taken name.
    fn move_tick(&mut self, key: usize) -> Option<Result<Reply, Error>> {
        let Job::Move(mv) = &self.reqs[key].job else { unreachable!() };
        let path = self.zmx_socket(&mv.name).expect("checked when the move began");
        let Ok(fd) = unix_socket() else { return Some(Err(Error::Io)) };
        self.move_submit(key, MoveOp::PostConnect, Sub::Connect { fd, path });
        None
    }

    /// The connect is back: posted, past the deadline, or another tick.
    fn move_post_answered(&mut self, key: usize, connected: bool) -> Option<Result<Reply, Error>> {
        let Job::Move(mv) = &self.reqs[key].job else { unreachable!() };
        if connected {
            return Some(Ok(Reply::Write { count: mv.count }));
        }
        if mv.post_deadline.is_some_and(|d| Instant::now() >= d) {
            return Some(Err(Error::MoveNoPost));
        }
        self.move_submit(key, MoveOp::Tick, Sub::Timeout { nanos: POST_TICK_NANOS });
        None
    }

    /// zmx's process exited: reap it.
    fn move_reap(&mut self, key: usize) {
        let Job::Move(mv) = &mut self.reqs[key].job else { return };
        if let Some((mut child, pidfd)) = mv.child.take() {
            if let Err(e) = child.try_wait() {
                log::warn!("move: reaping zmx: {e}");
            }
            self.ring.submit(Token::Discard, Sub::Close { fd: pidfd });
        }
    }

    fn move_end_step(&mut self, key: usize, result: Result<Reply, Error>) -> Step {
        self.move_end(key, result);
        Step::Wait
    }

    /// The move has its answer: send it (if still wanted) and unpin, so the
    /// record goes once its last operation (the child's exit) is back.
    fn move_end(&mut self, key: usize, result: Result<Reply, Error>) {
        let Job::Move(mv) = &mut self.reqs[key].job else { return };
        if mv.stage == Stage::Done {
            return;
        }
        mv.stage = Stage::Done;
        mv.pidfd = None;
        if let Err(e) = result {
            log::warn!("move of pid {} to zmx session \"{}\" failed: {}", mv.pid, mv.name.escape_ascii(), why(e));
        }
        let id = (mv.slot, mv.gen);
        self.moving.remove(&id);
        self.reqs[key].pinned = false;
        self.answer(key, result);
    }
}

/// Why a move was refused or failed, in words. The client's text is its
/// errno's (`errors.rs`: one of the strings 9P clients map), which the
/// four EPERM refusals share, so the log is where an operator reads which
/// one it was.
fn why(e: Error) -> &'static str {
    match e {
        Error::IllegalName => "a zmx session name is 1 to 64 bytes of A-Z a-z 0-9 . _ -",
        Error::NoSession => "no session resolved for this agent",
        Error::NoCwd => "the agent's cwd is unknown",
        Error::NoResumeForm => "this harness has no resume form",
        Error::NothingToResume => "nothing to resume: the agent has no session id",
        Error::NameTaken => "a live zmx session holds that name",
        Error::MoveBusy => "a move of this agent is already in progress",
        Error::MoveNotGone => "the agent did not exit after SIGTERM and SIGKILL",
        Error::MoveSpawn => "zmx could not be started",
        Error::MoveNoPost => "zmx did not post the session before the deadline",
        other => other.text(),
    }
}

fn pidfd_open(pid: u32) -> Result<OwnedFd, i32> {
    crate::sys::pidfd_open(pid).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
}

fn unix_socket() -> std::io::Result<OwnedFd> {
    crate::sys::unix_stream_socket()
}
