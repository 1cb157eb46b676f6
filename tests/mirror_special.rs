//! FIFOs, sockets and devices in a root (CONFORMANCE 23; issue 3,
//! "Exclusions"): listed and stat'd, never opened in a way that can block,
//! reads refused, and nobody else kept waiting. Devices need CAP_MKNOD to
//! make: without it that one test says so on stderr and passes (CI runs as
//! root, so there it runs).

mod common;

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixListener;

use common::*;

const NOT_REGULAR: &str = "Invalid argument";

fn fifo_world() -> std::sync::Arc<Scratch> {
    let s = Scratch::new();
    s.home_file(".hermes/SOUL.md", b"soul\n");
    s.home_fifo(".hermes/pipe");
    s.home_fifo(".hermes/logs/deeper/pipe");
    s.home_file(".hermes/logs/deeper/real.log", b"real\n");
    s
}

/// Try to open `fifo` for writing without blocking: ENXIO means no reader
/// has it open, so the daemon never opened it for reading.
fn fifo_has_a_reader(fifo: &std::path::Path) -> bool {
    match OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(fifo) {
        Ok(_) => true,
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => false,
        Err(e) => panic!("open {} for writing: {e}", fifo.display()),
    }
}

#[test]
fn a_fifo_is_listed_walked_and_stated_as_a_file() {
    let s = fifo_world();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    for (dir, path) in [("/hermes", "/hermes/pipe"), ("/hermes/logs/deeper", "/hermes/logs/deeper/pipe")] {
        let listed = c.list(dir, 1, 4096);
        let entry = listed.iter().find(|e| e.name == "pipe").unwrap_or_else(|| panic!("{path} not listed: {listed:?}"));
        assert_eq!((entry.mode & DMDIR, entry.qid.ty & QTDIR, entry.length), (0, 0, 0), "{entry:?}");
        let qids = c.walk_path(path, 2).qids();
        assert_eq!(qids.last(), Some(&entry.qid), "{path}: walk and listing disagree");
        assert_eq!(c.stat_ok(2), *entry, "{path}: stat and listing disagree");
        c.clunk_ok(2);
    }
}

#[test]
fn opening_a_fifo_is_refused_without_ever_opening_it() {
    let s = fifo_world();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000u);
    for path in ["/hermes/pipe", "/hermes/logs/deeper/pipe"] {
        c.walk_path(path, 1).qids();
        let (text, errno) = c.open(1, OREAD).expect_error();
        assert_eq!((text.as_str(), errno), (NOT_REGULAR, libc::EINVAL as u32), "{path}");
        c.read(1, 0, 100).expect_error();
        c.clunk_ok(1);
        assert!(!fifo_has_a_reader(&disk_path(&s.home, path).unwrap()), "{path} was opened");
    }
}

#[test]
fn a_fifo_with_a_writer_is_never_read() {
    let s = fifo_world();
    let fifo = s.home.join(".hermes/pipe");
    // O_RDWR opens a FIFO without waiting for the other end.
    let mut ours = OpenOptions::new().read(true).write(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
    ours.write_all(b"waiting in the pipe").unwrap();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.list("/hermes", 1, 4096);
    c.walk_path("/hermes/pipe", 2).qids();
    c.stat_ok(2);
    c.open(2, OREAD).assert_error(NOT_REGULAR);
    let mut left = [0u8; 64];
    let n = ours.read(&mut left).unwrap();
    assert_eq!(&left[..n], b"waiting in the pipe", "the daemon consumed bytes from the FIFO");
}

#[test]
fn a_refused_fifo_keeps_no_other_client_waiting() {
    let s = fifo_world();
    let d = Daemon::start_in(&s, &[]);
    let mut a = d.session(Dialect::P2000);
    let mut b = d.session(Dialect::P2000);
    a.walk_path("/hermes/pipe", 1).qids();
    let tag = a.tag();
    a.send(tag, &Tmsg::Open { fid: 1, mode: OREAD });
    assert_eq!(b.cat("/hermes/SOUL.md", 1), b"soul\n");
    assert_eq!(names(&b.list("/hermes/logs/deeper", 2, 4096)), ["pipe", "real.log"]);
    let r = a.recv();
    assert_eq!(r.tag(), tag);
    r.assert_error(NOT_REGULAR);
    assert_eq!(a.cat("/hermes/logs/deeper/real.log", 2), b"real\n", "the refused client goes on being served");
}

#[test]
fn a_unix_socket_in_a_root_is_listed_and_stated_but_never_connected_to() {
    let s = fifo_world();
    let listener = UnixListener::bind(s.home.join(".hermes/agent.sock")).unwrap();
    listener.set_nonblocking(true).unwrap();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let listed = c.list("/hermes", 1, 4096);
    let entry = listed.iter().find(|e| e.name == "agent.sock").expect("the socket is listed");
    assert_eq!(entry.mode & DMDIR, 0);
    c.walk_path("/hermes/agent.sock", 2).qids();
    assert_eq!(c.stat_ok(2), *entry);
    c.open(2, OREAD).assert_error(NOT_REGULAR);
    let accepted = listener.accept();
    assert!(
        accepted.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "the daemon connected: {accepted:?}"
    );
}

#[test]
fn a_crawl_of_a_root_with_a_fifo_finishes_and_reads_every_regular_file() {
    let s = fifo_world();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let crawled = c.crawl("/hermes");
    let got: Vec<(String, Result<Vec<u8>, String>)> =
        crawled.into_iter().filter(|x| x.entry.mode & DMDIR == 0).map(|x| (x.path, x.data)).collect();
    let refused = Err(NOT_REGULAR.to_string());
    assert_eq!(
        got,
        [
            ("/hermes/SOUL.md".to_string(), Ok(b"soul\n".to_vec())),
            ("/hermes/logs/deeper/pipe".to_string(), refused.clone()),
            ("/hermes/logs/deeper/real.log".to_string(), Ok(b"real\n".to_vec())),
            ("/hermes/pipe".to_string(), refused),
        ]
    );
}

/// Make a character device `major:minor` at `rel` under the home, if this
/// process may (CAP_MKNOD); false if it may not.
fn home_char_device(s: &Scratch, rel: &str, major: u32, minor: u32) -> bool {
    let path = s.home.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let c = std::ffi::CString::new(arg(&path)).unwrap();
    // SAFETY: mknod(2) on a NUL-terminated path we own.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(major, minor)) };
    if rc == 0 {
        return true;
    }
    let e = std::io::Error::last_os_error();
    assert_eq!(e.raw_os_error(), Some(libc::EPERM), "mknod {}: {e}", path.display());
    false
}

#[test]
fn character_devices_in_a_root_are_listed_and_stated_but_never_read() {
    let s = fifo_world();
    // /dev/zero would answer a read forever; /dev/tty's open can make a
    // controlling terminal or fail oddly.
    if !home_char_device(&s, ".hermes/dev/zero", 1, 5) || !home_char_device(&s, ".hermes/dev/tty", 5, 0) {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"mirror_special: devices skipped: mknod needs CAP_MKNOD\n",
        );
        return;
    }
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000u);
    let listed = c.list("/hermes/dev", 1, 4096);
    assert_eq!(names(&listed), ["tty", "zero"]);
    for e in &listed {
        let path = format!("/hermes/dev/{}", e.name);
        assert_eq!(e.mode & DMDIR, 0, "{path}");
        c.walk_path(&path, 2).qids();
        assert_eq!(c.stat_ok(2), *e, "{path}");
        let (text, errno) = c.open(2, OREAD).expect_error();
        assert_eq!((text.as_str(), errno), (NOT_REGULAR, libc::EINVAL as u32), "{path}");
        c.clunk_ok(2);
    }
    assert_eq!(c.cat("/hermes/SOUL.md", 3), b"soul\n");
}
