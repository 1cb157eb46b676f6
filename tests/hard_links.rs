//! Regular files with more than one hard link (defect 11): the other name
//! may be any file of the user's — a key outside every root, linked in as
//! `notes.md` — so such a file is neither listed, nor walked to, nor read,
//! unless `--allow-hard-links`. A directory, whose link count is its
//! subdirectories, is unaffected.

mod common;

use std::fs;
use std::sync::Arc;

use common::*;

const PLAIN: &[u8] = b"one name only\n";
const TWICE: &[u8] = b"two names in the home\n";

/// A home whose `/hermes` holds a file linked from outside every root
/// (`notes.md`), a pair of names of one file (`memories/a.md`,
/// `memories/b.md`), and a file with one name (`memories/plain.md`).
fn linked_home() -> Arc<Scratch> {
    let s = Scratch::new();
    let key = s.outside_file("id_ed25519", SECRET);
    fs::hard_link(key, s.home_dir(".hermes").join("notes.md")).unwrap();
    let a = s.home_file(".hermes/memories/a.md", TWICE);
    fs::hard_link(a, s.home.join(".hermes/memories/b.md")).unwrap();
    s.home_file(".hermes/memories/plain.md", PLAIN);
    s
}

fn start(s: &Arc<Scratch>, args: &[&str]) -> Daemon {
    let proc_dir = s.empty_proc();
    let mut all = vec!["--proc", proc_dir.as_str()];
    all.extend_from_slice(args);
    Daemon::start_in(s, &all)
}

fn listed(c: &mut Conn, path: &str) -> Vec<String> {
    names(&c.list(path, 50, SESSION_MSIZE - IOHDRSZ))
}

#[test]
fn a_hard_linked_file_is_neither_listed_nor_walked_to_by_default() {
    let s = linked_home();
    let d = start(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(listed(&mut c, "/hermes"), ["memories"]);
    assert_eq!(listed(&mut c, "/hermes/memories"), ["plain.md"]);
    for path in ["/hermes/notes.md", "/hermes/memories/a.md", "/hermes/memories/b.md"] {
        assert!(!c.reaches(path, 1), "{path} was walked to");
        let (dir, name) = path.rsplit_once('/').unwrap();
        c.walk_path(dir, 2);
        c.walk(2, 1, &[name]).assert_error("file does not exist");
        c.clunk_ok(2);
    }
    assert_eq!(c.cat("/hermes/memories/plain.md", 1), PLAIN);
    for found in c.crawl("/") {
        assert!(!found.data.as_ref().is_ok_and(|d| contains(d, SECRET)), "{} served the key", found.path);
    }
}

#[test]
fn a_file_walked_to_before_it_gained_a_second_name_is_not_opened_or_statted() {
    let s = linked_home();
    let d = start(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["hermes", "memories", "plain.md"]);
    fs::hard_link(s.home.join(".hermes/memories/plain.md"), s.root.join("plain-again.md")).unwrap();
    c.stat(1).assert_error("file does not exist");
    c.open(1, OREAD).assert_error("file does not exist");
}

#[test]
fn with_allow_hard_links_every_name_is_listed_and_read() {
    let s = linked_home();
    let d = start(&s, &["--allow-hard-links"]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(listed(&mut c, "/hermes"), ["memories", "notes.md"]);
    assert_eq!(listed(&mut c, "/hermes/memories"), ["a.md", "b.md", "plain.md"]);
    assert_eq!(c.cat("/hermes/notes.md", 1), SECRET);
    assert_eq!(c.cat("/hermes/memories/a.md", 1), TWICE);
    assert_eq!(c.cat("/hermes/memories/b.md", 1), TWICE);
    assert_eq!(c.cat("/hermes/memories/plain.md", 1), PLAIN);
}

#[test]
fn a_directory_with_many_links_is_served_either_way() {
    let s = linked_home();
    s.home_dir(".hermes/memories/sub1");
    s.home_dir(".hermes/memories/sub2");
    let links = std::os::unix::fs::MetadataExt::nlink(&fs::metadata(s.home.join(".hermes/memories")).unwrap());
    assert!(links >= 4, "a directory with two subdirectories has {links} links");
    for args in [&[][..], &["--allow-hard-links"][..]] {
        let d = start(&s, args);
        let mut c = d.session(Dialect::P2000);
        assert!(c.reaches("/hermes/memories", 1), "{args:?}");
        assert!(listed(&mut c, "/hermes/memories").iter().any(|n| n == "sub1"), "{args:?}");
        assert_eq!(c.cat("/hermes/memories/plain.md", 1), PLAIN, "{args:?}");
    }
}

#[test]
fn the_served_readme_says_how_to_serve_hard_links() {
    let d = start(&Scratch::new(), &[]);
    let mut c = d.session(Dialect::P2000);
    let text = String::from_utf8(c.cat("/README", 1)).unwrap();
    assert!(text.contains("--allow-hard-links"), "README:\n{text}");
}
