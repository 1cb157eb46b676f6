//! Reading files: read(5), CONFORMANCE item 24, and the facts `/pid` and
//! `/uptime`.

mod common;

use common::*;

#[test]
fn read_on_an_unopened_fid_is_an_error() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.read(1, 0, 100).assert_error("Bad file descriptor");
}

#[test]
fn read_on_an_unknown_fid_is_an_error() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.read(9, 0, 100).assert_error("Bad file descriptor");
}

#[test]
fn a_read_of_count_zero_returns_zero_bytes() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/README", 1);
    assert!(c.read_ok(1, 0, 0).is_empty());
}

#[test]
fn a_read_past_the_end_returns_zero_bytes() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/README", 1);
    assert!(c.read_ok(1, readme().len() as u64, 100).is_empty());
    assert!(c.read_ok(1, u64::MAX, 100).is_empty());
}

#[test]
fn a_read_returns_exactly_the_bytes_at_its_offset() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/README", 1);
    assert_eq!(c.read_ok(1, 10, 20), &readme()[10..30]);
}

#[test]
fn a_read_straddling_the_end_returns_what_is_left() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/README", 1);
    let len = readme().len();
    assert_eq!(c.read_ok(1, len as u64 - 5, 100), &readme()[len - 5..]);
}

#[test]
fn a_count_over_msize_minus_24_is_clamped() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(4096, "9P2000");
    c.attach_ok(ROOT);
    c.open_path("/README", 1);
    assert!(readme().len() > 4096, "the test needs a README longer than one msize");
    let r = c.read(1, 0, u32::MAX);
    assert_eq!(r.data().len(), (4096 - IOHDRSZ) as usize);
    assert!(r.bytes.len() <= 4096, "an Rread of {} bytes is over the msize", r.bytes.len());
}

#[test]
fn the_iounit_keeps_a_read_within_the_msize() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(4096, "9P2000");
    c.attach_ok(ROOT);
    c.walk_ok(ROOT, 1, &["README"]);
    let Rmsg::Open { iounit, .. } = c.open(1, OREAD).msg() else { panic!("open") };
    assert!(iounit == 0 || iounit <= 4096 - IOHDRSZ, "iounit {iounit}");
}

#[test]
fn readme_reads_back_exactly_the_served_text() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.cat("/README", 1), readme());
}

#[test]
fn readme_read_in_small_pieces_is_the_same_text() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/README", 1);
    let mut got = Vec::new();
    loop {
        let piece = c.read_ok(1, got.len() as u64, 97);
        if piece.is_empty() {
            break;
        }
        got.extend_from_slice(&piece);
    }
    assert_eq!(got, readme());
}

#[test]
fn the_length_stat_reports_is_the_bytes_a_read_returns() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    for name in ["README", "pid"] {
        let path = format!("/{name}");
        let data = c.cat(&path, 1);
        c.walk_ok(ROOT, 1, &[name]);
        assert_eq!(c.stat_ok(1).length, data.len() as u64, "{name}");
        c.clunk_ok(1);
    }
}

#[test]
fn pid_is_the_daemons_pid_on_one_line() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.cat("/pid", 1), format!("{}\n", d.pid).into_bytes());
}

#[test]
fn uptime_is_whole_seconds_on_one_line() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let text = String::from_utf8(c.cat("/uptime", 1)).unwrap();
    let line = text.strip_suffix('\n').unwrap_or_else(|| panic!("uptime {text:?} is not one line"));
    let secs: u64 = line.parse().unwrap_or_else(|_| panic!("uptime {line:?} is not a whole number"));
    assert!(secs < 3600, "a daemon started by this test is not {secs}s old");
}

#[test]
fn a_directory_fid_is_read_as_a_directory_not_as_text() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/", 1);
    let data = c.read_ok(1, 0, 4096);
    assert!(!entries_of(&data, Dialect::P2000).is_empty());
}

#[test]
fn two_fids_on_one_file_read_independently() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/README", 1);
    c.open_path("/README", 2);
    assert_eq!(c.read_ok(1, 100, 10), &readme()[100..110]);
    assert_eq!(c.read_ok(2, 0, 10), &readme()[..10]);
}
