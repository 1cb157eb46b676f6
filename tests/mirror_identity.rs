//! Identity and read-only-ness of mirrored files (issue 3, "Identity";
//! CONFORMANCE 22, 26, 28, 30): the qid a listing reports is the qid a walk
//! reports is the qid stat reports; qid.path is one per file on disk and
//! never a skeleton node's; QTDIR exactly for directories; stats are the
//! disk's; and nothing a client sends changes the disk.

mod common;

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use common::*;

/// A little of every root, and a hard link (two names, one file).
fn world() -> std::sync::Arc<Scratch> {
    let s = Scratch::new();
    for (rel, data) in [
        (".claude/projects/-home-glenda-a/1.jsonl", "one\n"),
        (".claude/projects/-home-glenda-a/2.jsonl", "two two\n"),
        (".claude/projects/-home-glenda-a/2/subagents/agent-x.jsonl", "sub\n"),
        (".claude/projects/-home-glenda-b/3.jsonl", ""),
        (".claude/history.jsonl", "history\n"),
        (".claude/skills/deploy/SKILL.md", "# deploy\n"),
        (".codex/sessions/2026/11/28/rollout-a.jsonl", "rollout\n"),
        (".codex/history.jsonl", "codex history\n"),
        (".codex/session_index.jsonl", "index\n"),
        (".codex/skills/notes/SKILL.md", "# notes\n"),
        (".omp/agent/sessions/-src/s.jsonl", "omp\n"),
        (".omp/agent/skills/review/SKILL.md", "# review\n"),
        (".hermes/SOUL.md", "soul\n"),
        (".hermes/memories/MEMORY.md", "memory\n"),
        (".dsh/profiles/default/package.json", "{}\n"),
    ] {
        s.home_file(rel, data.as_bytes());
    }
    s.home_dir(".dsh/storages");
    fs::hard_link(s.home.join(".hermes/SOUL.md"), s.home.join(".hermes/memories/soul-again.md")).unwrap();
    s
}

/// A daemon on `s`'s home that sees no process of this machine (/active
/// empty), so crawls of `/` are the test's own. Hard links are served:
/// these tests are about one file under two names having one qid.
fn serve(s: &std::sync::Arc<Scratch>) -> Daemon {
    let proc_dir = s.empty_proc();
    Daemon::start_in(s, &["--proc", &proc_dir, "--allow-hard-links"])
}

/// Everything mirrored from `s`'s home, except the /skills union (the same
/// files again).
fn crawl_mirrors(c: &mut Conn, s: &Scratch) -> Vec<Crawled> {
    c.crawl("/")
        .into_iter()
        .filter(|x| disk_path(&s.home, &x.path).is_some() && !x.path.starts_with("/skills/"))
        .collect()
}

#[test]
fn the_listing_the_walk_and_the_stat_report_one_qid_and_one_stat() {
    let s = world();
    let d = serve(&s);
    for dialect in [Dialect::P2000, Dialect::P2000u] {
        let mut c = d.session(dialect);
        // Every mirrored entry, the /skills union's included (the facts
        // move with the clock, so they are not the subject here).
        let crawled: Vec<Crawled> =
            c.crawl("/").into_iter().filter(|x| disk_path(&s.home, &x.path).is_some()).collect();
        assert!(crawled.len() > 30, "{crawled:#?}");
        for x in crawled {
            let qids = c.walk_path(&x.path, 1).qids();
            assert_eq!(qids.last(), Some(&x.entry.qid), "{}: walk and listing disagree", x.path);
            assert_eq!(c.stat_ok(1), x.entry, "{}: stat and listing disagree over {dialect:?}", x.path);
            c.clunk_ok(1);
        }
    }
}

#[test]
fn an_open_reports_the_qid_of_the_walk() {
    let s = world();
    let d = serve(&s);
    let mut c = d.session(Dialect::P2000);
    for x in crawl_mirrors(&mut c, &s) {
        let walked = *c.walk_path(&x.path, 1).qids().last().unwrap();
        assert_eq!(c.open_ok(1, OREAD), walked, "{}", x.path);
        c.clunk_ok(1);
    }
}

#[test]
fn qid_paths_are_one_per_file_on_disk_and_never_a_skeleton_nodes() {
    let s = world();
    let d = serve(&s);
    let mut c = d.session(Dialect::P2000);
    let mut by_inode: HashMap<(u64, u64), u64> = HashMap::new();
    let mut by_path: HashMap<u64, (u64, u64)> = HashMap::new();
    let mirrored = crawl_mirrors(&mut c, &s);
    for x in &mirrored {
        let disk = disk_path(&s.home, &x.path).unwrap_or_else(|| panic!("{} is not below a mount", x.path));
        let m = fs::metadata(&disk).unwrap();
        let inode = (m.dev(), m.ino());
        assert_eq!(
            *by_inode.entry(inode).or_insert(x.entry.qid.path),
            x.entry.qid.path,
            "{}: one file, two qid paths",
            x.path
        );
        assert_eq!(*by_path.entry(x.entry.qid.path).or_insert(inode), inode, "{}: two files, one qid path", x.path);
        assert_eq!(x.entry.qid.path >> 63, 0, "{}: a disk file's qid path has bit 63 clear", x.path);
    }
    assert_eq!(by_inode.len(), mirrored.len() - 1, "exactly one pair of names shares a file (the hard link)");
    let soul = mirrored.iter().find(|x| x.path == "/hermes/SOUL.md").unwrap().entry.qid;
    let again = mirrored.iter().find(|x| x.path == "/hermes/memories/soul-again.md").unwrap().entry.qid;
    assert_eq!(soul, again, "a hard link is the same file");
    // A session's (or an agent's) `transcript` is the file on disk itself,
    // reached by another path: it has the file's qid, and is no skeleton.
    let is_transcript =
        |p: &str| (p.starts_with("/sessions/") || p.starts_with("/active/")) && p.ends_with("/transcript");
    let crawled = c.crawl("/");
    for x in crawled.iter().filter(|x| is_transcript(&x.path)) {
        assert!(by_path.contains_key(&x.entry.qid.path), "{}: not the qid of the file it is", x.path);
    }
    let skeleton: Vec<u64> = crawled
        .iter()
        .filter(|x| disk_path(&s.home, &x.path).is_none() && !is_transcript(&x.path))
        .map(|x| x.entry.qid.path)
        .collect();
    assert!(skeleton.len() >= 6, "{skeleton:?}");
    for p in skeleton {
        assert!(!by_path.contains_key(&p), "a skeleton node shares qid path {p:#x} with a file");
    }
}

#[test]
fn qtdir_and_dmdir_are_set_exactly_for_directories() {
    let s = world();
    let d = serve(&s);
    let mut c = d.session(Dialect::P2000);
    let mirrored = crawl_mirrors(&mut c, &s);
    assert!(mirrored.iter().any(|x| x.path == "/dsh/storages"), "an empty directory is listed");
    for x in mirrored {
        let is_dir = fs::metadata(disk_path(&s.home, &x.path).unwrap()).unwrap().is_dir();
        let e = &x.entry;
        assert_eq!((e.qid.ty & QTDIR != 0, e.mode & DMDIR != 0), (is_dir, is_dir), "{}: {e:?}", x.path);
        let expected_mode = if is_dir { DMDIR | 0o555 } else { 0o444 };
        assert_eq!(e.mode, expected_mode, "{}", x.path);
        if !is_dir {
            assert_eq!(e.qid.ty, QTFILE, "{}", x.path);
        }
    }
}

#[test]
fn a_stat_reports_the_real_size_and_mtime_and_length_zero_for_directories() {
    let s = world();
    let old = s.home.join(".claude/projects/-home-glenda-a/1.jsonl");
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    fs::File::options().write(true).open(&old).unwrap().set_modified(when).unwrap();
    let d = serve(&s);
    let mut c = d.session(Dialect::P2000u);
    for x in crawl_mirrors(&mut c, &s) {
        let disk: PathBuf = disk_path(&s.home, &x.path).unwrap();
        let m = fs::metadata(&disk).unwrap();
        let e = &x.entry;
        let length = if m.is_dir() { 0 } else { m.len() };
        assert_eq!((e.length, e.mtime as i64), (length, m.mtime()), "{}", x.path);
        assert_eq!((e.n_uid, e.n_gid), (m.uid(), m.gid()), "{}: 9P2000.u numeric ids", x.path);
        assert_eq!(e.name, x.path.rsplit('/').next().unwrap(), "{}", x.path);
    }
    c.walk_path("/claude/projects/-home-glenda-a/1.jsonl", 1).qids();
    assert_eq!(c.stat_ok(1).mtime, 1_700_000_000);
}

#[test]
fn the_mounts_stat_under_their_tree_names() {
    let s = world();
    let d = serve(&s);
    let mut c = d.session(Dialect::P2000);
    for (path, name) in [
        ("/claude/history", "history"),
        ("/codex/session-index", "session-index"),
        ("/omp", "omp"),
        ("/skills/omp", "omp"),
        ("/claude/skills", "skills"),
    ] {
        c.walk_path(path, 1).qids();
        assert_eq!(c.stat_ok(1).name, name, "{path}");
        c.clunk_ok(1);
    }
}

// ---------------------------------------------------------------------------
// Nothing a client sends changes the disk.

const FILE: &str = "/hermes/SOUL.md";

/// The disk as the test left it: every path under the home with its bytes
/// (directories as None) and mode.
fn snapshot(s: &Scratch) -> Vec<(PathBuf, Option<Vec<u8>>, u32)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<(PathBuf, Option<Vec<u8>>, u32)>) {
        let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for p in entries {
            let m = fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                out.push((p.clone(), None, m.mode()));
                walk(&p, out);
            } else {
                out.push((p.clone(), Some(fs::read(&p).unwrap()), m.mode()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&s.home, &mut out);
    out
}

#[test]
fn opens_for_writing_truncating_removing_or_executing_are_refused_and_change_nothing() {
    let s = world();
    let before = snapshot(&s);
    let d = serve(&s);
    let mut c = d.session(Dialect::P2000u);
    for mode in [OWRITE, ORDWR, OREAD | OTRUNC, OREAD | ORCLOSE, OEXEC] {
        for path in [FILE, "/hermes/memories", "/claude/projects/-home-glenda-a/1.jsonl", "/claude/history"] {
            c.walk_path(path, 1).qids();
            let (text, errno) = c.open(1, mode).expect_error();
            assert_eq!((text.as_str(), errno), (READ_ONLY, libc::EROFS as u32), "{path} mode {mode:#x}");
            c.clunk_ok(1);
        }
    }
    c.walk_path(FILE, 1).qids();
    assert_eq!(c.cat_fid(1), b"soul\n", "a plain read still opens");
    c.clunk_ok(1);
    assert_eq!(snapshot(&s), before);
}

#[test]
fn a_write_to_an_open_mirrored_file_is_refused_and_changes_nothing() {
    let s = world();
    let before = snapshot(&s);
    let d = serve(&s);
    let mut c = d.session(Dialect::P2000);
    c.open_path(FILE, 1);
    c.rpc(&Tmsg::Write { fid: 1, offset: 0, data: b"scribble" }).assert_error(READ_ONLY);
    c.rpc(&Tmsg::Write { fid: 1, offset: 1 << 20, data: b"far away" }).assert_error(READ_ONLY);
    assert_eq!(c.read_all(1), b"soul\n");
    assert_eq!(snapshot(&s), before);
}

#[test]
fn a_create_in_a_mirrored_directory_is_refused_and_creates_nothing() {
    let s = world();
    let before = snapshot(&s);
    let d = serve(&s);
    let mut c = d.session(Dialect::P2000u);
    for (dir, name, perm, ext) in [
        ("/hermes/memories", "new.md", 0o644, ""),
        ("/claude/projects", "-home-glenda-new", DMDIR | 0o755, ""),
        ("/dsh/storages", "link", proto::DMSYMLINK | 0o777, "/etc/passwd"),
    ] {
        c.walk_path(dir, 1).qids();
        let r = c.rpc(&Tmsg::Create { fid: 1, name: name.as_bytes(), perm, mode: OWRITE, extension: ext.as_bytes() });
        r.assert_error(READ_ONLY);
        c.clunk_ok(1);
        assert!(!c.reaches(&join_tree(dir, name), 1), "{dir}/{name}");
    }
    assert_eq!(snapshot(&s), before);
}

#[test]
fn a_wstat_of_a_mirrored_file_is_refused_and_changes_nothing() {
    let s = world();
    let before = snapshot(&s);
    let d = serve(&s);
    let mut c = d.session(Dialect::P2000);
    c.walk_path(FILE, 1).qids();
    let st = c.stat_ok(1);
    for (name, mode, length) in
        [(&b"renamed.md"[..], st.mode, st.length), (b"SOUL.md", 0o777, st.length), (b"SOUL.md", st.mode, 0)]
    {
        let stat = Stat {
            ty: 0,
            dev: 0,
            qid: st.qid,
            mode,
            atime: u32::MAX,
            mtime: u32::MAX,
            length,
            name,
            uid: b"",
            gid: b"",
            muid: b"",
            extension: b"",
            n_uid: NONUNAME,
            n_gid: NONUNAME,
            n_muid: NONUNAME,
        };
        c.rpc(&Tmsg::Wstat { fid: 1, stat }).assert_error(READ_ONLY);
    }
    assert_eq!(c.stat_ok(1), st);
    assert_eq!(snapshot(&s), before);
}

#[test]
fn a_remove_of_a_mirrored_file_or_directory_is_refused_clunks_the_fid_and_removes_nothing() {
    let s = world();
    let before = snapshot(&s);
    let d = serve(&s);
    let mut c = d.session(Dialect::P2000);
    for path in [FILE, "/hermes/memories", "/dsh/storages", "/claude/projects", "/omp"] {
        c.walk_path(path, 1).qids();
        c.rpc(&Tmsg::Remove { fid: 1 }).assert_error(READ_ONLY);
        c.clunk(1).assert_error("Bad file descriptor");
        assert!(c.reaches(path, 1), "{path} is still there");
    }
    assert_eq!(snapshot(&s), before);
}

// ---------------------------------------------------------------------------
// Node ids, seen from outside: a fid names one place for its whole life.

#[test]
fn a_clone_of_a_mirrored_fid_names_the_same_file_after_the_original_is_clunked() {
    let s = world();
    let d = serve(&s);
    let mut c = d.session(Dialect::P2000);
    c.walk_path(FILE, 1).qids();
    let st = c.stat_ok(1);
    c.walk_ok(1, 2, &[]);
    c.clunk_ok(1);
    assert_eq!(c.stat_ok(2), st);
    assert_eq!(c.cat_fid(2), b"soul\n");
}

#[test]
fn a_fid_walked_after_another_was_freed_names_its_own_file_never_the_freed_one() {
    let s = world();
    let d = serve(&s);
    let mut c = d.session(Dialect::P2000);
    let paths = ["/hermes/SOUL.md", "/hermes/memories/MEMORY.md", "/codex/history", "/omp/sessions/-src/s.jsonl"];
    for round in 0..50 {
        let (a, b) = (paths[round % 4], paths[(round + 1) % 4]);
        c.walk_path(a, 1).qids();
        let name_a = c.stat_ok(1).name.clone();
        c.clunk_ok(1);
        c.walk_path(b, 2).qids();
        c.walk_path(a, 3).qids();
        assert_eq!(c.stat_ok(2).name, b.rsplit('/').next().unwrap(), "round {round}: {b}");
        assert_eq!(c.stat_ok(3).name, name_a, "round {round}: {a}");
        c.clunk_ok(2);
        c.clunk_ok(3);
    }
}

#[test]
fn two_walks_to_one_file_share_it_and_each_survives_the_others_clunk() {
    let s = world();
    let d = serve(&s);
    let mut a = d.session(Dialect::P2000);
    let mut b = d.session(Dialect::P2000u);
    a.walk_path(FILE, 1).qids();
    b.walk_path(FILE, 1).qids();
    a.walk_path(FILE, 2).qids();
    a.clunk_ok(1);
    b.clunk_ok(1);
    assert_eq!(a.stat_ok(2).name, "SOUL.md");
    assert_eq!(a.cat_fid(2), b"soul\n");
}
