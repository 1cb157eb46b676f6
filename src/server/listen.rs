//! Listening sockets, posting the daemon's name, and the signals it obeys.
//!
//! The posted name is a Unix socket at `post_dir()/<name>`. The
//! stale-socket protocol decides who owns it: a name is taken only by a
//! server that answers 9P. If a socket is already there, connect and send a
//! Tversion: a reply means a live server holds the name, and we refuse to
//! start rather than steal it; a refused connect, or silence until
//! `PROBE_DEADLINE`, means its daemon is dead (or was never a 9P server),
//! so it is unlinked and reclaimed. A bare connect is not enough: a daemon
//! killed with SIGKILL leaves a listening socket that still accepts for a
//! few milliseconds after it is reaped (its io_uring is torn down after
//! the process), and the connection is then reset. A hang-up before any
//! reply is asked again until the deadline, since it is either that dying
//! socket (which soon refuses) or a live daemon at `--max-conns`, which
//! accepts and closes every connection past its cap: one that keeps
//! hanging up is live, and holds its name — as is one that hung up and
//! then had not closed the last connection by the deadline (a capped
//! daemon on a loaded machine): a dead daemon's socket refuses, it does
//! not go silent after a hang-up. This runs once, at start-up,
//! before the loop, so its socket blocks (with timeouts).
//!
//! On the way out the name is unlinked only if the socket there is still
//! the one we bound.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::proto::{self, Dialect, Rmsg, Tmsg};

/// How long a socket at the posted path has to answer a Tversion before it
/// is taken for a dead daemon's. A live 9agents answers from its loop in
/// microseconds, and no turn of the loop runs near this long; a second
/// leaves room for a daemon on a machine under heavy load, and is all a
/// restart over a silent socket waits.
const PROBE_DEADLINE: Duration = Duration::from_secs(1);
/// How long to wait before asking again after a hang-up: the dying socket
/// of a killed daemon refuses within milliseconds.
const PROBE_RETRY: Duration = Duration::from_millis(2);
/// The msize the probe's Tversion asks for; a reply is read up to it.
const PROBE_MSIZE: u32 = 8192;

/// One listening socket, and the posted name it answers under, if any.
pub struct Listener {
    pub fd: OwnedFd,
    pub label: String,
    unlink_on_close: Option<(PathBuf, u64, u64)>,
}

impl Listener {
    /// A socket someone else bound and listens on, handed to us (socket
    /// activation): served, never unlinked, since its path is not ours.
    pub(crate) fn passed(fd: OwnedFd, label: String) -> Listener {
        Listener { fd, label, unlink_on_close: None }
    }

    /// Unpost (only if the socket at the path is still ours) and hand back
    /// the fd for the ring to close.
    pub fn close(self) -> OwnedFd {
        if let Some((path, dev, ino)) = &self.unlink_on_close {
            match std::fs::symlink_metadata(path) {
                Ok(m) if m.dev() == *dev && m.ino() == *ino => {
                    if let Err(e) = std::fs::remove_file(path) {
                        log::warn!("unpost {}: {e}", path.display());
                    } else {
                        log::info!("unposted {}", path.display());
                    }
                }
                Ok(_) => log::warn!("not unposting {}: another socket took its place", path.display()),
                Err(_) => {}
            }
        }
        self.fd
    }
}

/// Listen on a Unix socket at `path`, applying the stale-socket protocol to
/// whatever is there, and unlinking it on close.
pub fn unix(path: &Path) -> io::Result<Listener> {
    reclaim_if_stale(path)?;
    let listener =
        UnixListener::bind(path).map_err(|e| io::Error::new(e.kind(), format!("bind {}: {e}", path.display())))?;
    let meta = std::fs::symlink_metadata(path)?;
    log::info!("listening on unix!{}", path.display());
    Ok(Listener {
        fd: listener.into(),
        label: format!("unix!{}", path.display()),
        unlink_on_close: Some((path.to_path_buf(), meta.dev(), meta.ino())),
    })
}

/// The stale-socket protocol (see the module doc).
fn reclaim_if_stale(path: &Path) -> io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket; not touching it", path.display()),
        ));
    }
    match probe(path)? {
        Probe::Answers => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("name taken: a live server answers at {}", path.display()),
        )),
        Probe::HangsUp => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("name taken: a live server at {} accepts and hangs up (at its connection cap?)", path.display()),
        )),
        Probe::Stale(why) => {
            // The probe can take a second: only the socket it probed goes.
            match std::fs::symlink_metadata(path) {
                Ok(m) if (m.dev(), m.ino()) == (meta.dev(), meta.ino()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!("name taken: another socket was posted at {} while it was probed", path.display()),
                    ))
                }
            }
            log::info!("reclaiming stale socket {} ({why})", path.display());
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        }
    }
}

/// What the socket at the posted path turned out to be.
enum Probe {
    /// A 9P server answered the Tversion.
    Answers,
    /// Every connection was accepted and closed, until the deadline.
    HangsUp,
    /// Nothing holds the name: why.
    Stale(&'static str),
}

/// Ask the socket at `path` for an Rversion until `PROBE_DEADLINE`.
fn probe(path: &Path) -> io::Result<Probe> {
    let deadline = Instant::now() + PROBE_DEADLINE;
    let mut hung_up = false;
    loop {
        let mut stream = match UnixStream::connect(path) {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Ok(Probe::Stale("connection refused")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Probe::Stale("gone")),
            Err(e) => return Err(io::Error::new(e.kind(), format!("probing {}: {e}", path.display()))),
        };
        match ask_version(&mut stream, deadline) {
            Asked::Answered => return Ok(Probe::Answers),
            // A server that accepted and hung up before is alive: a slow
            // one (a loaded machine) may not have closed the last
            // connection by the deadline. A dead daemon's socket refuses.
            Asked::Silent if hung_up => return Ok(Probe::HangsUp),
            Asked::Silent => return Ok(Probe::Stale("no 9P reply before the deadline")),
            Asked::HungUp if Instant::now() + PROBE_RETRY >= deadline => return Ok(Probe::HangsUp),
            Asked::HungUp => {
                hung_up = true;
                std::thread::sleep(PROBE_RETRY);
            }
        }
    }
}

enum Asked {
    /// A 9P reply to the Tversion (an Rversion, or an Rerror: either way a
    /// live 9P server).
    Answered,
    /// EOF or a reset before a whole reply.
    HungUp,
    /// Nothing, or bytes that are no reply, before the deadline.
    Silent,
}

/// Send a Tversion on `stream` and read one reply, by `deadline`.
fn ask_version(stream: &mut UnixStream, deadline: Instant) -> Asked {
    let mut out = Vec::new();
    let version = Dialect::P2000.version().as_bytes();
    proto::encode_t(&mut out, proto::NOTAG, &Tmsg::Version { msize: PROBE_MSIZE, version }, Dialect::P2000);
    let left = || deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    if stream.set_write_timeout(Some(left())).is_err() || stream.write_all(&out).is_err() {
        return Asked::HungUp;
    }
    let mut buf = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        match proto::frame_size(&buf, PROBE_MSIZE) {
            Err(_) => return Asked::Silent,
            Ok(Some(n)) if buf.len() >= n => {
                return match proto::decode_r(&buf[..n], Dialect::P2000) {
                    Ok((proto::NOTAG, Rmsg::Version { .. } | Rmsg::Error { .. })) => Asked::Answered,
                    _ => Asked::Silent,
                };
            }
            Ok(_) => {}
        }
        if Instant::now() >= deadline || stream.set_read_timeout(Some(left())).is_err() {
            return Asked::Silent;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Asked::HungUp,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => return Asked::Silent,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Asked::HungUp,
        }
    }
}

/// Can only this machine reach `addr`? (`::ffff:127.0.0.1` is loopback
/// too; `0.0.0.0` and `::`, every address, are not.)
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().to_canonical().is_loopback()
}

/// Listen on TCP. A non-loopback address is served, loudly (the command
/// line refuses one unless told `--tcp-any`).
pub fn tcp(addr: SocketAddr) -> io::Result<Listener> {
    if !is_loopback(&addr) {
        log::warn!(
            "listening on tcp!{addr}: nothing on the wire is authenticated; anyone who can reach it reads the tree"
        );
    }
    let listener = TcpListener::bind(addr).map_err(|e| io::Error::new(e.kind(), format!("bind tcp!{addr}: {e}")))?;
    let local = listener.local_addr()?;
    log::info!("listening on tcp!{}!{}", local.ip(), local.port());
    Ok(Listener { fd: listener.into(), label: format!("tcp!{local}"), unlink_on_close: None })
}

/// The signals the daemon blocks and reads through its signalfd.
const READ: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGUSR1, libc::SIGCHLD];

/// The signals the daemon ignores.
const IGNORED: [libc::c_int; 1] = [libc::SIGPIPE];

/// Block SIGTERM, SIGINT, SIGUSR1 and SIGCHLD and return a signalfd that
/// reads them; ignore SIGPIPE (a peer hanging up is seen as a send error
/// instead). SIGUSR1 asks for one status line on stderr; SIGCHLD says a
/// child (a zmx a move started) may be waiting to be reaped. A child
/// inherits the mask and the ignored signals (std's spawn resets neither
/// reliably): every command the daemon runs goes through `start_clean`.
pub fn signals() -> io::Result<OwnedFd> {
    // SAFETY: plain libc calls on a local, initialised sigset; SIG_IGN for
    // SIGPIPE installs no handler code.
    unsafe {
        for sig in IGNORED {
            libc::signal(sig, libc::SIG_IGN);
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in READ {
            libc::sigaddset(&mut set, sig);
        }
        if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Makes `cmd` start its process with nothing blocked and every signal
/// the daemon handles at its default, as a process started from a shell
/// does: a zmx, and the agent it resumes, must stop on SIGTERM and on a
/// write to a closed pipe.
pub(crate) fn start_clean(cmd: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec and calls
    // only sigemptyset, sigprocmask and signal, which are async-signal-safe;
    // it touches no memory but its own stack.
    unsafe {
        cmd.pre_exec(|| {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
            for sig in IGNORED.into_iter().chain(READ) {
                if libc::signal(sig, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// Reap every child that has exited, without blocking: SIGCHLDs coalesce,
/// so one signal may stand for several children. A child the daemon
/// started is therefore never left a zombie, whatever the job that started
/// it is doing when it exits.
pub(crate) fn reap_children() {
    loop {
        match rustix::process::waitpid(None, rustix::process::WaitOptions::NOHANG) {
            Ok(Some((pid, status))) => log::debug!("child {} exited: {status:?}", pid.as_raw_nonzero()),
            Ok(None) | Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_127_8_and_1_and_their_v4_mapped_spelling() {
        for a in ["127.0.0.1:564", "127.8.9.10:1", "[::1]:564", "[::ffff:127.0.0.1]:564"] {
            assert!(is_loopback(&a.parse().unwrap()), "{a}");
        }
    }

    #[test]
    fn every_address_and_any_other_is_not_loopback() {
        for a in ["0.0.0.0:564", "[::]:564", "192.168.1.2:564", "[::ffff:10.0.0.1]:564", "[fe80::1]:564"] {
            assert!(!is_loopback(&a.parse().unwrap()), "{a}");
        }
    }
}
