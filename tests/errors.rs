//! Error texts and errnos: error(5), CONFORMANCE item 34.
//!
//! A plain 9P2000 client maps a text back to an errno (Linux by exact
//! match against net/9p/error.c, 9pfuse by substring); a 9P2000.u client
//! gets the errno beside the text. Both must come out the same.

mod common;

use common::*;

/// A fresh 9P2000.u session, and one fid on `/README`.
fn u_session() -> (Daemon, Conn) {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000u);
    c.walk_ok(ROOT, 1, &["README"]);
    (d, c)
}

#[test]
fn not_found_is_enoent_in_nine_p_2000_u() {
    let (_d, mut c) = u_session();
    let (text, errno) = c.walk(ROOT, 2, &["nosuch"]).expect_error();
    assert_eq!((text.as_str(), errno), ("file does not exist", libc::ENOENT as u32));
}

#[test]
fn not_a_directory_is_enotdir_in_nine_p_2000_u() {
    let (_d, mut c) = u_session();
    let (text, errno) = c.walk(1, 2, &["x"]).expect_error();
    assert_eq!((text.as_str(), errno), ("not a directory", libc::ENOTDIR as u32));
}

#[test]
fn a_name_too_long_is_enametoolong_in_nine_p_2000_u() {
    let (_d, mut c) = u_session();
    let name = vec![b'n'; 300];
    let (text, errno) = c.walk_bytes(ROOT, 2, &[&name]).expect_error();
    assert_eq!((text.as_str(), errno), ("File name too long", libc::ENAMETOOLONG as u32));
}

#[test]
fn a_bad_name_is_einval_in_nine_p_2000_u() {
    let (_d, mut c) = u_session();
    let (_, errno) = c.walk_bytes(ROOT, 2, &[b"."]).expect_error();
    assert_eq!(errno, libc::EINVAL as u32);
}

#[test]
fn an_unknown_fid_is_ebadf_in_nine_p_2000_u() {
    let (_d, mut c) = u_session();
    let (_, errno) = c.stat(50).expect_error();
    assert_eq!(errno, libc::EBADF as u32);
}

#[test]
fn a_refused_write_is_erofs_in_nine_p_2000_u() {
    let (_d, mut c) = u_session();
    let (text, errno) = c.rpc(&Tmsg::Remove { fid: 1 }).expect_error();
    assert_eq!((text.as_str(), errno), ("Read-only file system", libc::EROFS as u32));
}

#[test]
fn a_bad_directory_offset_is_espipe_in_nine_p_2000_u() {
    let (_d, mut c) = u_session();
    c.open_path("/", 2);
    let (text, errno) = c.read(2, 3, 4096).expect_error();
    assert_eq!((text.as_str(), errno), ("Illegal seek", libc::ESPIPE as u32));
}

#[test]
fn every_nine_p_2000_u_error_carries_a_nonzero_errno() {
    let (_d, mut c) = u_session();
    let replies = [
        c.auth(9),
        c.attach_with(3, 9, ""),
        c.walk(ROOT, 1, &["README"]),
        c.open(1, OWRITE),
        c.read(1, 0, 1),
        c.clunk(4),
    ];
    for r in replies {
        let (text, errno) = r.expect_error();
        assert_ne!(errno, 0, "{text}");
    }
}

#[test]
fn a_nine_p_2000_error_carries_no_errno() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    // Decoded strictly as 9P2000: an errno after the text would be
    // trailing bytes and fail the decode.
    let (text, errno) = c.walk(ROOT, 1, &["nosuch"]).expect_error();
    assert_eq!((text.as_str(), errno), ("file does not exist", 0));
}

#[test]
fn the_not_found_text_is_one_linux_and_9pfuse_both_map_to_enoent() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let (text, _) = c.walk(ROOT, 1, &["nosuch"]).expect_error();
    let known = ["No such file or directory", "file does not exist", "file not found"];
    assert!(known.contains(&text.as_str()), "{text:?}");
}

#[test]
fn the_too_many_fids_text_is_linuxs_emfile_text() {
    let d = Daemon::start(&["--max-fids", "1"]);
    let mut c = d.session(Dialect::P2000);
    c.walk(ROOT, 1, &[]).assert_error("Too many open files");
}

#[test]
fn the_read_only_text_is_the_one_linux_and_9pfuse_both_map_to_erofs() {
    // Linux matches "Read-only file system" exactly; 9pfuse finds "read-only".
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.open(1, OWRITE).assert_error("Read-only file system");
}
