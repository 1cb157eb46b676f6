//! The few system calls the server makes outside the ring, through rustix's
//! safe wrappers: a pidfd's open and signal (io_uring has neither), and the
//! socket a connect probe runs on. Each returns `std::io` types, so callers
//! see the same errors whichever layer they came from; nothing here needs
//! `unsafe`, which is why it is a module and not scattered `libc::syscall`s.

use std::io;
use std::os::fd::OwnedFd;

use rustix::net::{AddressFamily, SocketFlags, SocketType};
use rustix::process::{Pid, PidfdFlags};

pub(crate) use rustix::process::Signal;

/// A pidfd for `pid`: the process, pinned, whatever its pid is reused for
/// later. ESRCH when it has exited (and been reaped); EINVAL for pid 0 or a
/// number no pid can be.
pub(crate) fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    let pid =
        i32::try_from(pid).ok().and_then(Pid::from_raw).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    Ok(rustix::process::pidfd_open(pid, PidfdFlags::empty())?)
}

/// Send `sig` to the process `pidfd` pins (never to a process that reused
/// its pid).
pub(crate) fn pidfd_send_signal(pidfd: &OwnedFd, sig: Signal) -> io::Result<()> {
    Ok(rustix::process::pidfd_send_signal(pidfd, sig)?)
}

/// A new Unix stream socket, close-on-exec, for the ring to connect.
pub(crate) fn unix_stream_socket() -> io::Result<OwnedFd> {
    Ok(rustix::net::socket_with(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::CLOEXEC, None)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_pidfd_signals_its_process_and_an_exited_one_cannot_be_opened() {
        let mut child = Command::new("sleep").arg("60").spawn().unwrap();
        let pidfd = pidfd_open(child.id()).unwrap();
        pidfd_send_signal(&pidfd, Signal::KILL).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
        // Reaped: the pidfd still names it, but it is gone.
        assert_eq!(pidfd_send_signal(&pidfd, Signal::TERM).unwrap_err().raw_os_error(), Some(libc::ESRCH));
        assert_eq!(pidfd_open(child.id()).unwrap_err().raw_os_error(), Some(libc::ESRCH));
    }

    #[test]
    fn pid_zero_and_pids_past_the_pid_range_are_refused_not_wrapped() {
        for pid in [0, u32::MAX] {
            assert_eq!(pidfd_open(pid).unwrap_err().raw_os_error(), Some(libc::EINVAL));
        }
    }

    #[test]
    fn the_probe_socket_is_a_close_on_exec_unix_stream() {
        let fd = unix_stream_socket().unwrap();
        assert!(rustix::io::fcntl_getfd(&fd).unwrap().contains(rustix::io::FdFlags::CLOEXEC));
        assert_eq!(rustix::net::sockopt::socket_type(&fd).unwrap(), SocketType::STREAM);
        assert_eq!(rustix::net::getsockname(&fd).unwrap().address_family(), AddressFamily::UNIX);
    }
}
