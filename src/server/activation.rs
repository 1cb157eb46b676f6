//! Socket activation: listening sockets handed to us by systemd.
//!
//! systemd's protocol (sd_listen_fds(3)) passes sockets as descriptors 3,
//! 4, ... and says so in two variables: `LISTEN_FDS`, how many, and
//! `LISTEN_PID`, the process they are for. The pid is what makes the
//! variables ours rather than our parent's: a variable inherited from
//! whoever started us names another process, and is not an offer.
//!
//! It is done in two steps because the command line decides what an offer
//! is used for. `take_offer` runs first, before any thread exists: it reads
//! the variables and unsets them (all three, whoever they were for, as
//! `sd_listen_fds(1)` does), so no child — zmx, started by a move — ever
//! inherits an offer meant for us. `adopt` then checks each offered
//! descriptor is a listening stream socket, marks it close-on-exec (systemd
//! passes it inheritable) and makes it a `Listener` that is never
//! unlinked: systemd bound the path and owns it, so the daemon neither
//! posts nor unposts while it serves a passed socket. With `--fd N` the
//! offer is not listened on (systemd's `Accept=yes` passes one connected
//! socket, which `--fd 3` serves); its descriptors are only made
//! close-on-exec.

use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd, RawFd};

use rustix::fs::FileType;
use rustix::io::FdFlags;
use rustix::net::{sockopt, AddressFamily, SocketAddrUnix, SocketType};

use super::listen::Listener;

/// The first descriptor systemd passes (`SD_LISTEN_FDS_START`).
pub const FIRST_FD: RawFd = 3;
/// The most descriptors an offer may pass. A socket unit lists a few
/// `ListenStream=` lines; an offer of more is a broken environment, not
/// sockets to accept on, and the daemon refuses to start rather than walk
/// descriptors it was never given.
pub const OFFER_FDS_MAX: usize = 64;

const ENV_PID: &str = "LISTEN_PID";
const ENV_FDS: &str = "LISTEN_FDS";
const ENV_NAMES: &str = "LISTEN_FDNAMES";

/// The descriptors systemd passed to this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    pub fds: Range<RawFd>,
}

/// One passed listening socket: the listener, and its TCP address if it
/// is one (the caller decides whether a non-loopback one may be served).
pub struct Passed {
    pub listener: Listener,
    pub tcp: Option<SocketAddr>,
}

/// Read and unset the activation variables: the offer, if they name this
/// process. Call it before any thread starts (it changes the environment).
pub fn take_offer() -> io::Result<Option<Offer>> {
    let pid = std::env::var(ENV_PID).ok();
    let fds = std::env::var(ENV_FDS).ok();
    for var in [ENV_PID, ENV_FDS, ENV_NAMES] {
        std::env::remove_var(var);
    }
    offer_for(pid.as_deref(), fds.as_deref(), std::process::id())
}

/// The pure half of `take_offer`: what `LISTEN_PID` and `LISTEN_FDS` offer
/// the process `our_pid`.
fn offer_for(pid: Option<&str>, fds: Option<&str>, our_pid: u32) -> io::Result<Option<Offer>> {
    let (Some(pid), Some(fds)) = (pid, fds) else { return Ok(None) };
    if pid.parse::<u32>().ok() != Some(our_pid) {
        log::debug!("{ENV_PID}={pid} is not us ({our_pid}): no sockets passed");
        return Ok(None);
    }
    let bad = |why: String| Err(io::Error::new(io::ErrorKind::InvalidInput, why));
    let Ok(n) = fds.parse::<usize>() else {
        return bad(format!("{ENV_FDS}={fds:?}: not a count of passed sockets"));
    };
    if n > OFFER_FDS_MAX {
        return bad(format!("{ENV_FDS}={n}: more than the {OFFER_FDS_MAX} passed sockets 9agents takes"));
    }
    Ok((n > 0).then(|| Offer { fds: FIRST_FD..FIRST_FD + n as RawFd }))
}

/// Each offered descriptor, checked and made a listener.
pub fn adopt(offer: &Offer) -> io::Result<Vec<Passed>> {
    offer.fds.clone().map(adopt_one).collect()
}

/// Make the offered descriptors close-on-exec without listening on them
/// (`--fd` serves one of them, or another descriptor altogether).
pub fn seal(offer: &Offer) {
    for fd in offer.fds.clone() {
        if let Some(fd) = borrow_open(fd) {
            if let Err(e) = set_cloexec(fd) {
                log::warn!("passed fd {}: cannot make it close-on-exec: {e}", offer_label(fd));
            }
        }
    }
}

fn adopt_one(raw: RawFd) -> io::Result<Passed> {
    let refuse = |why: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("passed fd {raw}: {why}"));
    let fd = borrow_open(raw).ok_or_else(|| refuse("not an open descriptor"))?;
    if FileType::from_raw_mode(rustix::fs::fstat(fd)?.st_mode) != FileType::Socket {
        return Err(refuse("not a socket"));
    }
    if sockopt::socket_type(fd)? != SocketType::STREAM {
        return Err(refuse("not a stream socket (9P needs a byte stream)"));
    }
    if !sockopt::socket_acceptconn(fd)? {
        return Err(refuse("a socket, but not listening (with Accept=yes, serve it with --fd 3)"));
    }
    set_cloexec(fd)?;
    let (label, tcp) = describe(fd);
    log::info!("listening on {label} (passed fd {raw})");
    // SAFETY: `raw` is open (checked above), and the activation protocol
    // gives it to this process, which nothing else in it owns.
    let owned = unsafe { OwnedFd::from_raw_fd(raw) };
    Ok(Passed { listener: Listener::passed(owned, label), tcp })
}

/// `raw` borrowed, if it is an open descriptor.
fn borrow_open(raw: RawFd) -> Option<BorrowedFd<'static>> {
    // SAFETY: F_GETFD only asks whether `raw` is open.
    if unsafe { libc::fcntl(raw, libc::F_GETFD) } < 0 {
        return None;
    }
    // SAFETY: `raw` is open, and stays so: the offer's descriptors are
    // closed only by the `OwnedFd` `adopt_one` makes, after its last borrow.
    Some(unsafe { BorrowedFd::borrow_raw(raw) })
}

fn set_cloexec(fd: BorrowedFd<'_>) -> io::Result<()> {
    let flags = rustix::io::fcntl_getfd(fd)?;
    rustix::io::fcntl_setfd(fd, flags | FdFlags::CLOEXEC)?;
    Ok(())
}

/// How a passed socket is named in the logs (`unix!PATH`, `tcp!IP:PORT`,
/// or `fd!N` for what has no printable address), and its TCP address.
fn describe(fd: BorrowedFd<'_>) -> (String, Option<SocketAddr>) {
    let Ok(addr) = rustix::net::getsockname(fd) else {
        return (offer_label(fd), None);
    };
    match addr.address_family() {
        AddressFamily::INET | AddressFamily::INET6 => match SocketAddr::try_from(addr) {
            Ok(a) => (format!("tcp!{a}"), Some(a)),
            Err(_) => (offer_label(fd), None),
        },
        AddressFamily::UNIX => {
            let unix = SocketAddrUnix::try_from(addr).ok();
            let path = unix.as_ref().and_then(|u| u.path_bytes().map(<[u8]>::to_vec));
            match path {
                Some(p) => (format!("unix!{}", String::from_utf8_lossy(&p)), None),
                None => (offer_label(fd), None),
            }
        }
        _ => (offer_label(fd), None),
    }
}

fn offer_label(fd: BorrowedFd<'_>) -> String {
    use std::os::fd::AsRawFd;
    format!("fd!{}", fd.as_raw_fd())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offer_for_our_pid_passes_fds_from_three() {
        let offer = offer_for(Some("42"), Some("2"), 42).unwrap();
        assert_eq!(offer, Some(Offer { fds: 3..5 }));
    }

    #[test]
    fn an_offer_for_another_pid_is_not_ours() {
        assert_eq!(offer_for(Some("41"), Some("1"), 42).unwrap(), None);
        assert_eq!(offer_for(Some("not-a-pid"), Some("1"), 42).unwrap(), None);
    }

    #[test]
    fn without_both_variables_nothing_is_offered() {
        assert_eq!(offer_for(None, Some("1"), 42).unwrap(), None);
        assert_eq!(offer_for(Some("42"), None, 42).unwrap(), None);
        assert_eq!(offer_for(Some("42"), Some("0"), 42).unwrap(), None);
    }

    #[test]
    fn a_malformed_or_huge_count_for_us_is_refused() {
        let past_max = (OFFER_FDS_MAX + 1).to_string();
        for fds in ["", "one", "-1", &past_max] {
            let err = offer_for(Some("42"), Some(fds), 42).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{fds:?}");
            assert!(err.to_string().contains("LISTEN_FDS"), "{err}");
        }
        assert!(offer_for(Some("42"), Some(&OFFER_FDS_MAX.to_string()), 42).unwrap().is_some());
    }
}
