//! Stat and qids: stat(5), intro(5), CONFORMANCE items 26 and 28.

mod common;

use common::*;

/// Files whose text does not change while the daemon runs, so their whole
/// qid (version included) must agree everywhere.
const STEADY: [&str; 2] = ["README", "pid"];

#[test]
fn the_qid_a_listing_reports_is_the_qid_a_walk_reports_is_the_qid_stat_reports() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let listing = c.list("/", 1, 4096);
    for name in STEADY {
        let listed = listing.iter().find(|e| e.name == name).unwrap().qid;
        let walked = c.walk_ok(ROOT, 2, &[name])[0];
        let stated = c.stat_ok(2).qid;
        assert_eq!((listed, walked), (stated, stated), "{name}");
        c.clunk_ok(2);
    }
}

#[test]
fn every_listed_entry_has_the_qid_path_and_type_of_its_walk_and_stat() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    for e in c.list("/", 1, 4096) {
        let walked = c.walk_ok(ROOT, 2, &[e.name.as_str()])[0];
        let stated = c.stat_ok(2).qid;
        assert_eq!((e.qid.ty, e.qid.path), (walked.ty, walked.path), "{}", e.name);
        assert_eq!((e.qid.ty, e.qid.path), (stated.ty, stated.path), "{}", e.name);
        c.clunk_ok(2);
    }
}

#[test]
fn the_root_qid_of_attach_walk_and_stat_agree() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(8192, "9P2000");
    let attached = c.attach_ok(ROOT);
    let walked = c.walk_ok(ROOT, 1, &[".."])[0];
    assert_eq!((walked, c.stat_ok(ROOT).qid), (attached, attached));
}

#[test]
fn the_qid_open_reports_is_the_qid_stat_reports() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let opened = c.open_path("/README", 1);
    assert_eq!(opened, c.stat_ok(1).qid);
}

#[test]
fn qid_paths_are_distinct() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let mut paths: Vec<u64> = c.list("/", 1, 4096).iter().map(|e| e.qid.path).collect();
    paths.push(c.stat_ok(ROOT).qid.path);
    let n = paths.len();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), n);
}

#[test]
fn qid_paths_are_the_same_in_every_session() {
    let d = Daemon::start(&[]);
    let mut a = d.session(Dialect::P2000);
    let mut b = d.session(Dialect::P2000u);
    assert_eq!(ids(&a.list("/", 1, 4096)), ids(&b.list("/", 1, 4096)));
}

#[test]
fn qtdir_is_set_exactly_for_directories() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.stat_ok(ROOT).qid.ty & QTDIR, QTDIR);
    for e in c.list("/", 1, 4096) {
        assert_eq!(e.qid.ty & QTDIR != 0, e.mode & DMDIR != 0, "{}", e.name);
    }
}

#[test]
fn the_root_is_a_directory_of_length_zero_and_mode_0555() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let root = c.stat_ok(ROOT);
    assert_eq!((root.mode, root.length, root.qid.ty), (DMDIR | 0o555, 0, QTDIR));
}

#[test]
fn the_files_are_mode_0444() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    for name in ["README", "pid", "uptime"] {
        c.walk_ok(ROOT, 1, &[name]);
        let st = c.stat_ok(1);
        assert_eq!((st.mode, st.qid.ty), (0o444, QTFILE), "{name}");
        c.clunk_ok(1);
    }
}

#[test]
fn stat_names_the_file_by_its_last_element() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["..", "README"]);
    assert_eq!(c.stat_ok(1).name, "README");
}

#[test]
fn a_listing_entry_is_the_stat_of_its_file() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let listed = c.list("/", 1, 4096).into_iter().find(|e| e.name == "README").unwrap();
    c.walk_ok(ROOT, 2, &["README"]);
    assert_eq!(c.stat_ok(2), listed);
}

#[test]
fn the_readme_length_is_its_text_length() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    assert_eq!(c.stat_ok(1).length, readme().len() as u64);
}

#[test]
fn mtimes_are_real_times() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    for e in c.list("/", 1, 4096) {
        assert!((e.mtime as i64 - now).abs() < 86_400, "{} mtime {} is not near now {now}", e.name, e.mtime);
    }
}

#[test]
fn every_stat_names_an_owner() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let root = c.stat_ok(ROOT);
    assert!(!root.uid.is_empty() && !root.gid.is_empty(), "{root:?}");
}

#[test]
fn a_nine_p_2000_stat_carries_no_u_fields() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    // Decoded strictly as plain 9P2000: .u's tail would be trailing bytes.
    let st = c.stat_ok(ROOT);
    assert_eq!((st.n_uid, st.n_gid, st.extension.as_str()), (NONUNAME, NONUNAME, ""));
}

#[test]
fn a_nine_p_2000_u_stat_carries_an_empty_extension_and_numeric_ids() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000u);
    c.walk_ok(ROOT, 1, &["README"]);
    let st = c.stat_ok(1);
    // SAFETY: getuid and getgid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    assert_eq!((st.extension.as_str(), st.n_uid, st.n_gid), ("", uid, gid));
}

#[test]
fn a_nine_p_2000_u_listing_carries_numeric_ids() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000u);
    // SAFETY: getuid cannot fail and touches no memory.
    let uid = unsafe { libc::getuid() };
    for e in c.list("/", 1, 4096) {
        assert_eq!(e.n_uid, uid, "{}", e.name);
    }
}

#[test]
fn stat_of_an_unknown_fid_is_an_error() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.stat(5).assert_error("Bad file descriptor");
}

#[test]
fn stat_of_an_open_fid_works() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/pid", 1);
    assert_eq!(c.stat_ok(1).name, "pid");
}
