//! The exclusions and the symlinks (issue 3, "Exclusions"; CONFORMANCE 20
//! and 21): every rule of the seed's list, in every root, at depths 1 to 4,
//! is unreachable by walk, absent from listings and never read; a symlink
//! of any kind at any depth is neither listed nor walked.
//!
//! Each fixture is one home with the same little tree under every mount:
//! a chain of ordinary directories `lvl-2/lvl-3/lvl-4`, and at each depth
//! one excluded entry per rule (holding `SECRET`) beside an ordinary file
//! (`visible-<depth>.txt`) that must be served, so every "absent" is
//! measured against a "present" in the same directory.

mod common;

use common::*;

/// One name per rule of the seed's list (issue 3, "Exclusions").
const RULES: &[&str] = &[
    // Substrings, any case, anywhere in the name.
    ".credentials.json",
    "my-token.txt",
    "auth.json",
    "OAuth-cache.json",
    "author-notes.md",
    "SECRET-plan.md",
    // Endings.
    "api.key",
    "server.pem",
    ".env",
    "notes.env",
    // The configuration files, whole names.
    "settings.json",
    "settings.yaml",
    "settings.local.json",
    "config.yml",
    "config.yaml",
    "config.toml",
    "models.yml",
    "models.yaml",
    ".ssh",
    // Private key prefixes.
    "id_rsa",
    "id_dsa.pub",
    "id_ecdsa",
    "id_ed25519",
];

/// The fixture directories, one per mount whose contents the tree serves
/// (the skills directories are also served through /skills, see `SERVED`).
const HOMES: &[&str] = &[
    ".claude/projects",
    ".claude/skills",
    ".codex/sessions",
    ".codex/skills",
    ".omp/agent",
    ".omp/agent/skills",
    ".hermes",
    ".dsh",
];

/// Every served directory the fixture appears under: all five roots and
/// the skills union.
const SERVED: &[&str] = &[
    "/claude/projects",
    "/claude/skills",
    "/skills/claude",
    "/codex/sessions",
    "/skills/codex",
    "/omp",
    "/skills/omp",
    "/hermes",
    "/dsh",
];

const DEPTHS: std::ops::RangeInclusive<usize> = 1..=4;

/// The chain of ordinary directories to depth `depth` ("" at depth 1).
fn chain(depth: usize) -> String {
    (2..=depth).map(|d| format!("lvl-{d}/")).collect()
}

/// How an excluded name is laid out: as a file, or as a directory with an
/// ordinary file inside (which its directory's name must hide too).
#[derive(Clone, Copy, Debug)]
enum Shape {
    File,
    Dir,
}

fn furnish(s: &Scratch, shape: Shape) {
    for home in HOMES {
        for depth in DEPTHS {
            let dir = format!("{home}/{}", chain(depth));
            s.home_file(&format!("{dir}visible-{depth}.txt"), format!("visible at depth {depth}\n").as_bytes());
            for rule in RULES {
                match shape {
                    Shape::File => s.home_file(&format!("{dir}{rule}"), SECRET),
                    Shape::Dir => s.home_file(&format!("{dir}{rule}/inside.txt"), SECRET),
                };
            }
        }
    }
}

/// Walk, list and `..` checks of every rule at every depth under every
/// served directory.
fn assert_all_hidden(c: &mut Conn, shape: Shape) {
    let mut checked = 0;
    for served in SERVED {
        for depth in DEPTHS {
            let dir = format!("{served}/{}", chain(depth));
            let dir = dir.trim_end_matches('/');
            let listed = names(&c.list(dir, 1, c.msize - IOHDRSZ));
            assert!(listed.contains(&format!("visible-{depth}.txt")), "{dir} lists {listed:?}");
            c.walk_path(dir, 2).qids();
            for rule in RULES {
                let what = format!("{shape:?} {rule} at depth {depth} under {served}");
                assert!(!listed.contains(&rule.to_string()), "{what}: listed in {listed:?}");
                c.walk(2, 3, &[rule]).assert_error("file does not exist");
                assert!(!c.reaches(&join_tree(dir, rule), 3), "{what}: reached from the root");
                assert!(!c.reaches(&format!("{}/inside.txt", join_tree(dir, rule)), 3), "{what}: reached below");
                if depth < 4 {
                    let next = format!("lvl-{}", depth + 1);
                    let r = c.walk(2, 3, &[&next, "..", rule]);
                    assert_eq!(r.qids().len(), 2, "{what}: reached through ..");
                }
                checked += 1;
            }
            c.clunk_ok(2);
        }
    }
    assert_eq!(checked, SERVED.len() * 4 * RULES.len());
}

/// Crawl everything the daemon serves: no byte of `SECRET`, and every
/// visible file of the fixture read back whole.
fn assert_never_read(c: &mut Conn) {
    let crawled = c.crawl("/");
    for x in &crawled {
        assert!(!contains(x.path.as_bytes(), b"inside.txt"), "{} was served", x.path);
        if let Ok(data) = &x.data {
            assert!(!contains(data, SECRET), "{} served a secret", x.path);
        }
    }
    let visible = crawled.iter().filter(|x| x.entry.name.starts_with("visible-")).count();
    // Every visible file under every served directory, plus /omp/skills,
    // which is .omp/agent/skills seen from /omp.
    assert_eq!(visible, (SERVED.len() + 1) * 4, "crawled {visible} visible files");
}

#[test]
fn every_rule_hides_a_file_at_every_depth_in_every_root() {
    let s = Scratch::new();
    furnish(&s, Shape::File);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_all_hidden(&mut c, Shape::File);
}

#[test]
fn every_rule_hides_a_directory_and_all_below_it_at_every_depth_in_every_root() {
    let s = Scratch::new();
    furnish(&s, Shape::Dir);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000u);
    assert_all_hidden(&mut c, Shape::Dir);
}

#[test]
fn a_crawl_of_the_whole_tree_never_reads_an_excluded_file() {
    let s = Scratch::new();
    furnish(&s, Shape::File);
    let proc_dir = s.empty_proc();
    let d = Daemon::start_in(&s, &["--proc", &proc_dir]);
    let mut c = d.session(Dialect::P2000);
    assert_never_read(&mut c);
}

#[test]
fn a_crawl_of_the_whole_tree_never_reads_below_an_excluded_directory() {
    let s = Scratch::new();
    furnish(&s, Shape::Dir);
    let proc_dir = s.empty_proc();
    let d = Daemon::start_in(&s, &["--proc", &proc_dir]);
    let mut c = d.session(Dialect::P2000u);
    assert_never_read(&mut c);
}

#[test]
fn the_rules_ignore_case_and_spare_their_cousins() {
    let s = Scratch::new();
    let hidden = ["AUTH", "Token.log", "x-CREDENTIALS", "ClientSecret", "PROD.ENV", "Server.PEM", "API.KEY", "ID_RSA"];
    let shown = [
        "env",
        "environment",
        "key.txt",
        "pem",
        "ssh",
        "config.json",
        "settings",
        "models.db",
        "my_id_rsa_notes",
        "id_card",
    ];
    for name in hidden.iter().chain(&shown) {
        s.home_file(&format!(".hermes/case/{name}"), name.as_bytes());
    }
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let mut expected: Vec<String> = shown.iter().map(|n| n.to_string()).collect();
    expected.sort();
    assert_eq!(names(&c.list("/hermes/case", 1, 4096)), expected);
    for name in hidden {
        assert!(!c.reaches(&format!("/hermes/case/{name}"), 2), "{name}");
    }
}

#[test]
fn names_the_walk_refuses_never_reach_the_disk_even_where_the_path_exists() {
    let s = Scratch::new();
    s.home_file(".hermes/a/b.txt", b"behind a slash\n");
    s.home_file(".hermes/.ssh/id_ed25519", SECRET);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_path("/hermes", 1).qids();
    let bad: [&[u8]; 8] = [b"a/b.txt", b"", b".", b"a/../a", b"./a", b"a\0b.txt", b".ssh/id_ed25519", b"/etc"];
    for name in bad {
        let r = c.walk_bytes(1, 2, &[name]);
        assert!(r.is_error(), "walk of {:?} from /hermes: {r:?}", String::from_utf8_lossy(name));
    }
    let too_long = vec![b'a'; 256];
    c.walk_bytes(1, 2, &[&too_long]).assert_error("File name too long");
    assert_eq!(c.walk_ok(1, 2, &["a", "b.txt"]).len(), 2, "one name at a time is fine");
}

// ---------------------------------------------------------------------------
// Symlinks.

/// The kinds of symlink every depth gets, by name.
const LINKS: &[&str] = &["link-to-file", "link-to-dir", "link-out-file", "link-out-dir", "link-dangling", "link-up"];

/// Under every root's mount, at depths 1 to 3: a real file and directory,
/// and one symlink of each kind beside them.
fn furnish_links(s: &Scratch) -> Vec<String> {
    let out_file = s.outside_file("leak/leak.txt", SECRET);
    let out_dir = out_file.parent().unwrap().to_path_buf();
    let mut dirs = Vec::new();
    for (served, home) in [
        ("/claude/projects", ".claude/projects"),
        ("/codex/sessions", ".codex/sessions"),
        ("/omp", ".omp/agent"),
        ("/hermes", ".hermes"),
        ("/dsh", ".dsh"),
        ("/skills/claude", ".claude/skills"),
    ] {
        for depth in 1..=3 {
            let rel = format!("{home}/{}", chain(depth));
            s.home_file(&format!("{rel}real.txt"), b"real\n");
            s.home_file(&format!("{rel}real-dir/leak.txt"), b"a real file, named like the outside one\n");
            s.home_symlink(&format!("{rel}link-to-file"), "real.txt".as_ref());
            s.home_symlink(&format!("{rel}link-to-dir"), "real-dir".as_ref());
            s.home_symlink(&format!("{rel}link-out-file"), &out_file);
            s.home_symlink(&format!("{rel}link-out-dir"), &out_dir);
            s.home_symlink(&format!("{rel}link-dangling"), "no-such-target".as_ref());
            s.home_symlink(&format!("{rel}link-up"), "../../../../../..".as_ref());
            dirs.push(format!("{served}/{}", chain(depth)).trim_end_matches('/').to_string());
        }
    }
    dirs
}

#[test]
fn a_symlink_of_any_kind_at_any_depth_is_absent_from_the_listing() {
    let s = Scratch::new();
    let dirs = furnish_links(&s);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    for dir in dirs {
        let listed = names(&c.list(&dir, 1, 4096));
        assert!(
            listed.contains(&"real.txt".to_string()) && listed.contains(&"real-dir".to_string()),
            "{dir}: {listed:?}"
        );
        for link in LINKS {
            assert!(!listed.contains(&link.to_string()), "{dir}/{link} listed: {listed:?}");
        }
    }
}

#[test]
fn a_symlink_of_any_kind_at_any_depth_is_not_found_by_walk() {
    let s = Scratch::new();
    let dirs = furnish_links(&s);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    for dir in dirs {
        c.walk_path(&dir, 1).qids();
        for link in LINKS {
            c.walk(1, 2, &[link]).assert_error("file does not exist");
            assert!(!c.reaches(&join_tree(&dir, link), 2), "{dir}/{link}");
        }
        for through in [["link-to-dir", "leak.txt"], ["link-out-dir", "leak.txt"]] {
            let r = c.walk(1, 2, &through);
            assert!(r.is_error(), "{dir}/{through:?} walked: {r:?}");
        }
        assert_eq!(c.walk_ok(1, 2, &["real-dir", "leak.txt"]).len(), 2, "the real directory is there");
        c.clunk_ok(2);
        c.clunk_ok(1);
    }
}

#[test]
fn a_crawl_of_a_tree_full_of_symlinks_reads_nothing_from_outside() {
    let s = Scratch::new();
    furnish_links(&s);
    let proc_dir = s.empty_proc();
    let d = Daemon::start_in(&s, &["--proc", &proc_dir]);
    let mut c = d.session(Dialect::P2000);
    let crawled = c.crawl("/");
    for x in &crawled {
        assert!(!x.entry.name.starts_with("link-"), "{} served", x.path);
        if let Ok(data) = &x.data {
            assert!(!contains(data, SECRET), "{} served bytes from outside", x.path);
        }
    }
    let real = crawled.iter().filter(|x| x.entry.name == "real.txt").count();
    assert_eq!(real, 6 * 3 + 3, "every real.txt, /claude/skills' also through /skills/claude");
}

#[test]
fn a_mount_that_is_a_symlink_is_absent() {
    let s = Scratch::new();
    let elsewhere = s.outside_file("sessions/2026/leak.jsonl", SECRET);
    s.home_file(".codex/history.jsonl", b"h\n");
    s.home_symlink(".codex/sessions", elsewhere.parent().unwrap().parent().unwrap());
    s.home_symlink(".claude/history.jsonl", "/etc/passwd".as_ref());
    s.home_symlink(".omp/agent", elsewhere.parent().unwrap());
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(names(&c.list("/codex", 1, 4096)), ["history"]);
    assert!(c.list("/claude", 1, 4096).is_empty());
    for path in ["/codex/sessions", "/codex/sessions/2026/leak.jsonl", "/claude/history", "/omp", "/omp/leak.jsonl"] {
        assert!(!c.reaches(path, 1), "{path}");
    }
}
