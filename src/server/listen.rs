//! Listening sockets, posting the daemon's name, and the signals it obeys.
//!
//! The posted name is a Unix socket at `post_dir()/<name>`. The
//! stale-socket protocol decides who owns it: if a socket is already there,
//! connect to it — refused means its daemon died without unposting, so it is
//! unlinked and reclaimed; answered means a live daemon holds the name, and
//! we refuse to start rather than steal it. On the way out the name is
//! unlinked only if the socket there is still the one we bound.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// One listening socket, and the posted name it answers under, if any.
pub struct Listener {
    pub fd: OwnedFd,
    pub label: String,
    unlink_on_close: Option<(PathBuf, u64, u64)>,
}

impl Listener {
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
    match UnixStream::connect(path) {
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("name taken: a live server answers at {}", path.display()),
        )),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            log::info!("reclaiming stale socket {}", path.display());
            std::fs::remove_file(path)
        }
        Err(e) => Err(io::Error::new(e.kind(), format!("probing {}: {e}", path.display()))),
    }
}

/// Listen on TCP. A non-loopback address is allowed, loudly.
pub fn tcp(addr: SocketAddr) -> io::Result<Listener> {
    if !addr.ip().is_loopback() {
        log::warn!("listening on {addr}: the tree is readable by anyone who can reach it over the network");
    }
    let listener = TcpListener::bind(addr).map_err(|e| io::Error::new(e.kind(), format!("bind tcp!{addr}: {e}")))?;
    let local = listener.local_addr()?;
    log::info!("listening on tcp!{}!{}", local.ip(), local.port());
    Ok(Listener { fd: listener.into(), label: format!("tcp!{local}"), unlink_on_close: None })
}

/// Block SIGTERM, SIGINT and SIGUSR1 and return a signalfd that reads
/// them; ignore SIGPIPE (a peer hanging up is seen as a send error
/// instead). SIGUSR1 asks for one status line on stderr.
pub fn signals() -> io::Result<OwnedFd> {
    // SAFETY: plain libc calls on a local, initialised sigset; SIG_IGN for
    // SIGPIPE installs no handler code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGUSR1);
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
