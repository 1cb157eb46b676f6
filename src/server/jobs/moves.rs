//! The move, as a parked write to an agent's `zmx`: refuse before
//! destroying anything, then SIGTERM, SIGKILL after `--move-kill-after`,
//! give up at `--move-give-up`; spawn `zmx run <name> -d <resume argv>` in
//! the agent's cwd; answer the write when `<zmx registry>/<name>` answers
//! a connect, or an error at `--move-post-deadline`. Every wait is an
//! operation on the ring (a connect, a poll of a pidfd, a timeout, a
//! slurp of `/proc/<pid>/stat`), so the daemon serves everyone else
//! meanwhile.
//!
//! The move is pinned: a Tflush or a hang-up forgets the reply, but the
//! move goes on to its end. Every way it ends — a refusal, a failed
//! socket, a spawn that fails — is an answer of this job, so it can never
//! stay parked. The agent counts as "moving" (a second move of it is
//! refused) exactly while this record lives. zmx is the daemon's child;
//! the server reaps every child when it exits (SIGCHLD), whatever the move
//! is doing then.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::errors::Error;
use crate::facts::{Fact, Root};
use crate::moves;
use crate::ring::Sub;
use crate::sys::{self, Signal};
use crate::tree::Backing;

use super::super::listen::start_clean;
use super::super::probe::{Batch, Kind, Probe, Target};
use super::cx::{drive, Cx, Event, Reply, Step};
use super::gather::readlink;

/// How often the zmx registry is asked for the new session's socket.
const POST_TICK_NANOS: u64 = 20_000_000;

/// The job's ops: the identity probe is op 0 (the batch's index).
const OP_NAME_PROBE: u32 = 1;
const OP_EXITED: u32 = 2;
const OP_KILL: u32 = 3;
const OP_GIVE_UP: u32 = 4;
const OP_TICK: u32 = 5;
const OP_POSTED: u32 = 6;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Start,
    /// Asking the registry whether a live session holds the name.
    NameProbe,
    /// Reading the agent's stat, to be sure the pidfd is the agent.
    Identity,
    /// SIGTERM sent; waiting for the exit (SIGKILL at the kill timer).
    Ending,
    /// zmx spawned; looking for its post every tick.
    Posting,
}

pub(crate) struct Move {
    slot: u32,
    gen: u32,
    data: Vec<u8>,
    stage: Stage,
    argv: Vec<Vec<u8>>,
    name: Vec<u8>,
    socket: Vec<u8>,
    cwd: Vec<u8>,
    pid: u32,
    starttime: u64,
    pidfd: Option<OwnedFd>,
    probe: Batch,
    /// Ring keys of the timers and the exit poll, cancelled once moot.
    waits: Vec<usize>,
    post_deadline: Option<Instant>,
    /// Whether this job holds the agent's place in `Cx::moving`.
    registered: bool,
}

impl Move {
    pub(crate) fn new(slot: u32, gen: u32, data: &[u8]) -> Box<Move> {
        Box::new(Move {
            slot,
            gen,
            data: data.to_vec(),
            stage: Stage::Start,
            argv: Vec::new(),
            name: Vec::new(),
            socket: Vec::new(),
            cwd: Vec::new(),
            pid: 0,
            starttime: 0,
            pidfd: None,
            probe: Batch::default(),
            waits: Vec::new(),
            post_deadline: None,
            registered: false,
        })
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        let result = match (self.stage, ev) {
            (Stage::Start, _) => self.begin(cx),
            (Stage::NameProbe, Event::Done(_, c)) if c.result == 0 => Err(Error::NameTaken),
            (Stage::NameProbe, Event::Done(..)) => self.identity(cx),
            (Stage::Identity, ev) => match drive(&mut self.probe, &mut cx.ops, ev) {
                Err(step) => return step,
                Ok(()) => self.identified(cx),
            },
            (Stage::Ending, Event::Done(OP_EXITED, _)) => self.spawn(cx),
            (Stage::Ending, Event::Done(OP_KILL, _)) => {
                self.signal(Signal::KILL);
                Ok(None)
            }
            (Stage::Ending, Event::Done(OP_GIVE_UP, _)) => Err(Error::MoveNotGone),
            (Stage::Posting, Event::Done(OP_TICK, _)) => self.tick(cx),
            (Stage::Posting, Event::Done(OP_POSTED, c)) => self.posted(cx, c.result == 0),
            _ => Ok(None),
        };
        match result {
            Ok(None) => Step::Wait,
            Ok(Some(reply)) => self.end(cx, Ok(reply)),
            Err(e) => self.end(cx, Err(e)),
        }
    }

    /// Everything that can be refused is refused before anything is done.
    fn begin(&mut self, cx: &mut Cx) -> Result<Option<Reply>, Error> {
        let refused = self.check(cx);
        if let Err(e) = refused {
            log::warn!(
                "move to zmx session \"{}\" refused: {}",
                self.data.trim_ascii_end().escape_ascii(),
                e.reason().unwrap_or(e.text())
            );
        }
        refused?;
        cx.moving.insert((self.slot, self.gen));
        self.registered = true;
        self.stage = Stage::NameProbe;
        let fd = sys::unix_stream_socket().map_err(|e| Error::from_errno(e.raw_os_error().unwrap_or(libc::EIO)))?;
        cx.ops.submit(OP_NAME_PROBE, Sub::Connect { fd, path: self.socket.clone() });
        Ok(None)
    }

    fn check(&mut self, cx: &mut Cx) -> Result<(), Error> {
        let name = moves::parse_name(&self.data)?.to_vec();
        let agent = cx.agents.get(self.slot, self.gen).ok_or(Error::NotFound)?;
        let session = agent.session.clone().filter(|s| !s.id.is_empty() || s.via == "none").ok_or(Error::NoSession)?;
        let found = agent.found;
        self.cwd = match readlink(cx.tree, Root::Proc, format!("{}/cwd", found.pid).as_bytes()) {
            Ok(Fact::Link(l)) => l,
            // The process is gone (or a corpse): the entry is stale.
            Err(libc::ENOENT | libc::ESRCH) => return Err(Error::NotFound),
            _ => return Err(Error::NoCwd),
        };
        let transcript = session.transcript.as_deref().and_then(|rel| {
            let mut path = cx.tree.harness_base(found.harness)?.as_bytes().to_vec();
            path.push(b'/');
            path.extend_from_slice(rel);
            Some(path)
        });
        let resume = moves::resume_argv(found.harness, &session.id, transcript.as_deref())?;
        if cx.moving.contains(&(self.slot, self.gen)) {
            return Err(Error::MoveBusy);
        }
        let mut socket = cx.cfg.zmx_dir.as_os_str().as_bytes().to_vec();
        socket.push(b'/');
        socket.extend_from_slice(&name);
        if socket.len() >= 108 {
            return Err(Error::IllegalName);
        }
        (self.socket, self.argv, self.pid, self.starttime) =
            (socket, moves::zmx_argv(&name, resume), found.pid, found.starttime);
        self.name = name;
        Ok(())
    }

    /// Pin the process with a pidfd, then read its stat: only a process
    /// whose starttime is the agent's is signalled.
    fn identity(&mut self, cx: &mut Cx) -> Result<Option<Reply>, Error> {
        match sys::pidfd_open(self.pid) {
            Ok(fd) => self.pidfd = Some(fd),
            // The agent has already exited: nothing to kill, resume it.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return self.spawn(cx),
            Err(e) => return Err(Error::from_errno(e.raw_os_error().unwrap_or(libc::EIO))),
        }
        let rel = CString::new(format!("{}/stat", self.pid)).expect("no NUL");
        let backing = Backing { base: cx.tree.proc_base().clone(), rel };
        self.probe = Batch::one(Probe::new(Target::Beneath(backing), Kind::Slurp(4096), true));
        self.stage = Stage::Identity;
        match drive(&mut self.probe, &mut cx.ops, Event::Start) {
            Ok(()) => self.identified(cx),
            Err(_) => Ok(None),
        }
    }

    /// The stat is back: the same process gets SIGTERM and the clocks start.
    fn identified(&mut self, cx: &mut Cx) -> Result<Option<Reply>, Error> {
        let stat = std::mem::take(&mut self.probe.probes[0].data);
        std::mem::take(&mut self.probe).release(&mut cx.ops);
        if !crate::active::proc::is_same_process(self.starttime, &stat) {
            // The pid is another process now, or a corpse: the agent is gone.
            self.pidfd = None;
            return self.spawn(cx);
        }
        self.stage = Stage::Ending;
        self.signal(Signal::TERM);
        let fd = self.pidfd.as_ref().map(|f| f.as_raw_fd()).expect("pinned above");
        let (kill, give_up) = (cx.cfg.move_kill_after.as_nanos() as u64, cx.cfg.move_give_up.as_nanos() as u64);
        self.waits = vec![
            cx.ops.submit(OP_EXITED, Sub::PollIn { fd }),
            cx.ops.submit(OP_KILL, Sub::Timeout { nanos: kill }),
            cx.ops.submit(OP_GIVE_UP, Sub::Timeout { nanos: give_up }),
        ];
        Ok(None)
    }

    fn signal(&self, sig: Signal) {
        if let Some(fd) = &self.pidfd {
            if let Err(e) = sys::pidfd_send_signal(fd, sig) {
                log::debug!("move: signal {sig:?}: {e}");
            }
        }
    }

    /// The agent is gone: spawn zmx with the fixed argv, in its cwd,
    /// without ZMX_SESSION, with the signal handling a shell would give it
    /// (`start_clean`). The server reaps it when it exits.
    fn spawn(&mut self, cx: &mut Cx) -> Result<Option<Reply>, Error> {
        self.cancel_waits(cx);
        self.pidfd = None;
        let mut cmd = Command::new(&cx.cfg.zmx);
        cmd.args(self.argv.iter().map(|a| std::ffi::OsStr::from_bytes(a)))
            .current_dir(std::ffi::OsStr::from_bytes(&self.cwd))
            .env_remove("ZMX_SESSION")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        start_clean(&mut cmd);
        if let Err(e) = cmd.spawn() {
            log::warn!("move: spawning {}: {e}", cx.cfg.zmx.display());
            return Err(Error::MoveSpawn);
        }
        self.stage = Stage::Posting;
        self.post_deadline = Some(Instant::now() + cx.cfg.move_post_deadline);
        cx.ops.submit(OP_TICK, Sub::Timeout { nanos: POST_TICK_NANOS });
        Ok(None)
    }

    /// A tick: does the session's socket answer a connect yet? A socket
    /// file alone is not a post — a stale one may lie there.
    fn tick(&mut self, cx: &mut Cx) -> Result<Option<Reply>, Error> {
        let fd = sys::unix_stream_socket().map_err(|e| Error::from_errno(e.raw_os_error().unwrap_or(libc::EIO)))?;
        cx.ops.submit(OP_POSTED, Sub::Connect { fd, path: self.socket.clone() });
        Ok(None)
    }

    /// The connect is back: posted, past the deadline, or another tick.
    fn posted(&mut self, cx: &mut Cx, connected: bool) -> Result<Option<Reply>, Error> {
        if connected {
            return Ok(Some(Reply::Write { count: self.data.len() as u32 }));
        }
        if self.post_deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Error::MoveNoPost);
        }
        cx.ops.submit(OP_TICK, Sub::Timeout { nanos: POST_TICK_NANOS });
        Ok(None)
    }

    fn cancel_waits(&mut self, cx: &mut Cx) {
        for key in self.waits.drain(..) {
            cx.ops.cancel(key);
        }
    }

    /// The move has its answer: nothing it waits on matters any more.
    fn end(&mut self, cx: &mut Cx, result: Result<Reply, Error>) -> Step {
        self.cancel_waits(cx);
        self.pidfd = None;
        if let (Err(e), true) = (&result, self.stage != Stage::Start) {
            log::warn!(
                "move of pid {} to zmx session \"{}\" failed: {}",
                self.pid,
                self.name.escape_ascii(),
                e.reason().unwrap_or(e.text())
            );
        }
        Step::Answer(result)
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        if self.registered {
            cx.moving.remove(&(self.slot, self.gen));
        }
        self.probe.release(&mut cx.ops);
        if let Some(fd) = self.pidfd {
            cx.ops.close(fd);
        }
    }
}
