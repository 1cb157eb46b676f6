//! getdents64, which io_uring has no operation for: run inline, so every
//! caller bounds it. A directory with more entries than the bound is an
//! error (`DirTooLarge`), never a shorter list.

use std::os::fd::{AsRawFd, OwnedFd};

use crate::errors::Error;
use crate::facts::Name;

/// The bytes of one getdents64 call's buffer.
const DIRENTS_BUF_BYTES: usize = 32 * 1024;
/// The fixed part of a `linux_dirent64`: ino[8] off[8] reclen[2] type[1].
const DIRENT_HEADER_BYTES: usize = 19;

/// Every entry of the open directory `fd` but `.` and `..`, at most `max`.
pub fn read(fd: &OwnedFd, max: usize) -> Result<Vec<Name>, Error> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; DIRENTS_BUF_BYTES];
    loop {
        // SAFETY: getdents64 writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd.as_raw_fd(), buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            return Err(Error::Io);
        }
        if n == 0 {
            return Ok(out);
        }
        parse(&buf[..n as usize], &mut out, max)?;
    }
}

/// Append the entries of one getdents64 buffer.
fn parse(buf: &[u8], out: &mut Vec<Name>, max: usize) -> Result<(), Error> {
    let mut at = 0usize;
    while at + DIRENT_HEADER_BYTES <= buf.len() {
        let ino = u64::from_ne_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
        let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
        if reclen < DIRENT_HEADER_BYTES || at + reclen > buf.len() {
            return Err(Error::Io);
        }
        let d_type = buf[at + 18];
        let raw = &buf[at + DIRENT_HEADER_BYTES..at + reclen];
        let name = &raw[..memchr::memchr(0, raw).unwrap_or(raw.len())];
        at += reclen;
        if name == b"." || name == b".." {
            continue;
        }
        if out.len() == max {
            return Err(Error::DirTooLarge);
        }
        out.push(Name { name: name.to_vec(), ino, d_type });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ino: u64, d_type: u8, name: &[u8]) -> Vec<u8> {
        let reclen = (DIRENT_HEADER_BYTES + name.len() + 1).next_multiple_of(8);
        let mut r = vec![0u8; reclen];
        r[..8].copy_from_slice(&ino.to_ne_bytes());
        r[16..18].copy_from_slice(&(reclen as u16).to_ne_bytes());
        r[18] = d_type;
        r[DIRENT_HEADER_BYTES..DIRENT_HEADER_BYTES + name.len()].copy_from_slice(name);
        r
    }

    #[test]
    fn dot_and_dot_dot_are_skipped_and_the_rest_kept_with_inode_and_type() {
        let mut buf = record(1, libc::DT_DIR, b".");
        buf.extend(record(2, libc::DT_DIR, b".."));
        buf.extend(record(77, libc::DT_LNK, b"link"));
        let mut out = Vec::new();
        parse(&buf, &mut out, 10).unwrap();
        assert_eq!(out, vec![Name { name: b"link".to_vec(), ino: 77, d_type: libc::DT_LNK }]);
    }

    #[test]
    fn one_entry_past_the_bound_is_an_error_not_a_shorter_list() {
        let mut buf = record(5, libc::DT_REG, b"a");
        buf.extend(record(6, libc::DT_REG, b"b"));
        assert_eq!(parse(&buf, &mut Vec::new(), 1), Err(Error::DirTooLarge));
    }

    #[test]
    fn a_record_length_that_runs_past_the_buffer_is_refused() {
        let mut buf = record(5, libc::DT_REG, b"a");
        buf[16] = 200;
        assert_eq!(parse(&buf, &mut Vec::new(), 10), Err(Error::Io));
    }
}
