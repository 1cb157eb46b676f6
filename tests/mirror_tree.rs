//! The mirror tree: the five roots and what of each is served (issue 3,
//! "The roots", "The tree", "Listings"), against fixture homes built in
//! each test's scratch HOME.

mod common;

use std::fs;

use common::*;

/// A transcript that is not all ASCII and not all lines, so byte-identical
/// means byte-identical: multi-byte UTF-8, a NUL, a CR, no final newline.
const TRANSCRIPT: &[u8] =
    b"{\"type\":\"user\",\"message\":\"caf\xc3\xa9 \xe2\x98\x95\"}\r\n{\"type\":\"assistant\",\"text\":\"a\\u0000b\"}\n\x00\xff tail";

/// A transcript longer than one read at the session's msize, so reading it
/// back takes several reads at increasing offsets.
fn long_transcript() -> Vec<u8> {
    (0..400).flat_map(|i| format!("{{\"n\":{i},\"text\":\"line {i} of the transcript\"}}\n").into_bytes()).collect()
}

#[test]
fn a_fixture_transcript_reads_back_byte_identical() {
    let s = Scratch::new();
    let long = long_transcript();
    assert!(long.len() > 2 * SESSION_MSIZE as usize, "the fixture must span several reads");
    s.home_file(".claude/projects/-home-glenda-src/one.jsonl", TRANSCRIPT);
    s.home_file(".claude/projects/-home-glenda-src/long.jsonl", &long);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.cat("/claude/projects/-home-glenda-src/one.jsonl", 1), TRANSCRIPT);
    assert_eq!(c.cat("/claude/projects/-home-glenda-src/long.jsonl", 1), long);
}

#[test]
fn every_mounted_file_reads_back_byte_identical_over_both_dialects() {
    let s = Scratch::new();
    let files = [
        (".claude/history.jsonl", "/claude/history"),
        (".codex/history.jsonl", "/codex/history"),
        (".codex/session_index.jsonl", "/codex/session-index"),
        (".codex/sessions/2026/11/28/rollout-x.jsonl", "/codex/sessions/2026/11/28/rollout-x.jsonl"),
        (".omp/agent/sessions/-src/s.jsonl", "/omp/sessions/-src/s.jsonl"),
        (".hermes/SOUL.md", "/hermes/SOUL.md"),
        (".dsh/sessions/session-1/session.jsonl.zstd", "/dsh/sessions/session-1/session.jsonl.zstd"),
    ];
    for (i, (rel, _)) in files.iter().enumerate() {
        s.home_file(rel, format!("{rel}: {i}\n").repeat(i + 1).as_bytes());
    }
    let d = Daemon::start_in(&s, &[]);
    for dialect in [Dialect::P2000, Dialect::P2000u] {
        let mut c = d.session(dialect);
        for (rel, path) in files {
            assert_eq!(c.cat(path, 1), fs::read(s.home.join(rel)).unwrap(), "{path} over {dialect:?}");
        }
    }
}

#[test]
fn a_mounted_file_a_read_at_an_offset_returns_the_bytes_there() {
    let s = Scratch::new();
    let long = long_transcript();
    s.home_file(".hermes/logs/gateway.log", &long);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/hermes/logs/gateway.log", 1);
    assert_eq!(c.read_ok(1, 1234, 100), &long[1234..1334]);
    assert_eq!(c.read_ok(1, long.len() as u64 - 7, 100), &long[long.len() - 7..]);
    assert!(c.read_ok(1, long.len() as u64, 100).is_empty());
    assert!(c.read_ok(1, u64::MAX, 100).is_empty());
}

#[test]
fn a_mirrored_read_of_count_zero_is_empty_and_a_count_over_the_msize_is_clamped() {
    let s = Scratch::new();
    let long = long_transcript();
    s.home_file(".hermes/logs/gateway.log", &long);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.connect();
    c.version(4096, "9P2000");
    c.attach_ok(ROOT);
    c.open_path("/hermes/logs/gateway.log", 1);
    assert!(c.read_ok(1, 0, 0).is_empty());
    let r = c.read(1, 10, u32::MAX);
    assert_eq!(r.data(), &long[10..10 + (4096 - IOHDRSZ) as usize]);
    assert!(r.bytes.len() <= 4096, "an Rread of {} bytes is over the msize", r.bytes.len());
}

#[test]
fn a_mirrored_directory_read_from_an_offset_that_is_not_the_previous_end_is_an_error() {
    let s = Scratch::new();
    many(&s, 10);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/hermes/many", 1);
    let first = c.read_ok(1, 0, 200);
    assert!(!first.is_empty());
    c.read(1, first.len() as u64 + 1, 200).assert_error("Illegal seek");
    c.read(1, 1, 200).assert_error("Illegal seek");
    assert_eq!(c.read_ok(1, 0, 200), first, "offset 0 starts again");
}

#[test]
fn a_directory_larger_than_the_ring_lists_whole() {
    let s = Scratch::new();
    let dir = s.home_dir(".dsh/big");
    for i in 0..3000 {
        fs::write(dir.join(format!("{i:04}")), b"").unwrap();
    }
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let listed = c.list("/dsh/big", 1, SESSION_MSIZE - IOHDRSZ);
    let expected: Vec<String> = (0..3000).map(|i| format!("{i:04}")).collect();
    assert_eq!(listed.into_iter().map(|e| e.name.clone()).collect::<Vec<_>>(), expected);
}

#[test]
fn claude_serves_only_projects_history_and_skills() {
    let s = Scratch::new();
    s.home_file(".claude/projects/p/s.jsonl", b"{}\n");
    s.home_file(".claude/history.jsonl", b"{}\n");
    s.home_file(".claude/skills/x/SKILL.md", b"# x\n");
    for other in ["sessions/48213.json", "statsig/statsig.stable_id.1", "todos/t.json", "ide/1.lock", "new-thing-2027"]
    {
        s.home_file(&format!(".claude/{other}"), b"not served\n");
    }
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(names(&c.list("/claude", 1, 4096)), ["history", "projects", "skills"]);
    for name in ["sessions", "statsig", "todos", "ide", "new-thing-2027", "history.jsonl", "settings.json"] {
        assert!(!c.reaches(&format!("/claude/{name}"), 2), "/claude/{name} must not be reachable");
    }
}

#[test]
fn codex_serves_only_sessions_session_index_and_history() {
    let s = Scratch::new();
    s.home_file(".codex/sessions/2026/11/28/rollout-a.jsonl", b"{}\n");
    s.home_file(".codex/session_index.jsonl", b"{}\n");
    s.home_file(".codex/history.jsonl", b"{}\n");
    s.home_file(".codex/skills/s/SKILL.md", b"# s\n");
    for other in ["thread-writer-locks/a.lock", "log/codex-tui.log", "version.json", "archived_sessions/a.jsonl"] {
        s.home_file(&format!(".codex/{other}"), b"not served\n");
    }
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(names(&c.list("/codex", 1, 4096)), ["history", "session-index", "sessions"]);
    for name in ["thread-writer-locks", "log", "version.json", "archived_sessions", "skills", "session_index.jsonl"] {
        assert!(!c.reaches(&format!("/codex/{name}"), 2), "/codex/{name} must not be reachable");
    }
}

#[test]
fn omp_is_its_agent_directory_and_hermes_and_dsh_are_whole() {
    let s = Scratch::new();
    s.home_file(".omp/agent/sessions/-src/s.jsonl", b"omp\n");
    s.home_file(".omp/outside-agent.txt", b"not served\n");
    s.home_file(".hermes/SOUL.md", b"hermes\n");
    s.home_file(".dsh/profiles/default/package.json", b"{}\n");
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(names(&c.list("/omp", 1, 4096)), ["sessions"]);
    assert_eq!(c.cat("/omp/sessions/-src/s.jsonl", 1), b"omp\n");
    assert!(!c.reaches("/omp/agent", 1), "/omp is .omp/agent itself");
    assert!(!c.reaches("/omp/outside-agent.txt", 1));
    assert_eq!(names(&c.list("/hermes", 1, 4096)), ["SOUL.md"]);
    assert_eq!(names(&c.list("/dsh", 1, 4096)), ["profiles"]);
}

/// The skills union: /skills/<h> is each harness's skills directory.
fn skills_world() -> std::sync::Arc<Scratch> {
    let s = Scratch::new();
    s.home_file(".claude/skills/deploy/SKILL.md", b"# deploy (claude)\n");
    s.home_file(".claude/skills/deploy/scripts/deploy.sh", b"#!/bin/sh\necho deploy\n");
    s.home_file(".codex/skills/release-notes/SKILL.md", b"# release notes (codex)\n");
    s.home_file(".omp/agent/skills/review/SKILL.md", b"# review (omp)\n");
    s
}

/// The crawl of `path` with `path` cut off the front of every entry's path:
/// (relative path, qid, bytes).
fn relative_crawl(c: &mut Conn, path: &str) -> Vec<(String, Qid, Vec<u8>)> {
    c.crawl(path).into_iter().map(|x| (x.path[path.len()..].to_string(), x.entry.qid, x.data.unwrap())).collect()
}

#[test]
fn the_skills_union_mirrors_each_harness_byte_for_byte_with_the_same_qids() {
    let s = skills_world();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(names(&c.list("/skills", 1, 4096)), ["claude", "codex", "omp"]);
    for (union, own) in [("/skills/claude", "/claude/skills"), ("/skills/omp", "/omp/skills")] {
        let mirrored = relative_crawl(&mut c, union);
        assert!(mirrored.len() >= 2, "{union}: {mirrored:?}");
        assert_eq!(mirrored, relative_crawl(&mut c, own), "{union} against {own}");
        let here = *c.walk_path(union, 1).qids().last().unwrap();
        let there = *c.walk_path(own, 2).qids().last().unwrap();
        assert_eq!(here, there, "{union} and {own} are one directory, with one qid");
        assert_eq!(c.stat_ok(1).qid, c.stat_ok(2).qid);
        c.clunk_ok(1);
        c.clunk_ok(2);
    }
}

#[test]
fn each_skills_directory_reads_back_what_is_on_disk() {
    let s = skills_world();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let crawled = c.crawl("/skills");
    let files: Vec<_> = crawled.iter().filter(|x| x.entry.mode & DMDIR == 0).collect();
    assert_eq!(files.len(), 4, "{crawled:#?}");
    for f in files {
        let disk = disk_path(&s.home, &f.path).unwrap();
        assert_eq!(f.data.as_ref().unwrap(), &fs::read(&disk).unwrap(), "{}", f.path);
    }
}

#[test]
fn a_harness_without_a_skills_directory_is_absent_from_the_union() {
    let s = Scratch::new();
    s.home_file(".claude/skills/a/SKILL.md", b"a\n");
    s.home_dir(".codex/sessions");
    s.home_dir(".omp/agent/sessions");
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(names(&c.list("/skills", 1, 4096)), ["claude"]);
    assert!(!c.reaches("/skills/codex", 1));
    assert!(!c.reaches("/skills/omp", 1));
}

#[test]
fn a_root_that_does_not_exist_is_absent_and_appears_once_created() {
    let s = Scratch::new();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let root = names(&c.list("/", 1, 4096));
    for h in ["claude", "codex", "omp", "hermes", "dsh"] {
        assert!(!root.contains(&h.to_string()), "{h} listed with no ~/.{h}: {root:?}");
        assert!(!c.reaches(&format!("/{h}"), 2), "/{h} walkable with no ~/.{h}");
    }
    assert!(c.list("/skills", 1, 4096).is_empty());

    s.home_file(".hermes/SOUL.md", b"soul\n");
    s.home_dir(".claude");
    s.home_dir(".omp/agent");
    let root = names(&c.list("/", 1, 4096));
    for h in ["claude", "hermes", "omp"] {
        assert!(root.contains(&h.to_string()), "{h} not listed once created: {root:?}");
    }
    assert!(!root.contains(&"codex".to_string()) && !root.contains(&"dsh".to_string()), "{root:?}");
    assert_eq!(c.cat("/hermes/SOUL.md", 2), b"soul\n");
    assert!(c.list("/claude", 1, 4096).is_empty(), "/claude lists mounts whose targets do not exist");

    s.home_file(".claude/projects/p/s.jsonl", b"s\n");
    assert_eq!(names(&c.list("/claude", 1, 4096)), ["projects"]);
}

/// A base is kept open for the looks beneath it (`--listing-window`), but
/// a look that finds it gone lets go of it: a harness home renamed away is
/// not looked beneath from an fid walked before, once seen gone.
#[test]
fn a_root_renamed_away_is_not_looked_beneath_once_it_is_seen_gone() {
    let s = Scratch::new();
    s.home_file(".dsh/profiles/default/package.json", b"{}\n");
    let d = Daemon::start_in(&s, &["--listing-window", "600000"]);
    let mut c = d.session(Dialect::P2000);
    assert!(matches!(c.walk_path("/dsh/profiles", 1).msg(), Rmsg::Walk { .. }));
    assert!(c.reaches("/dsh/profiles/default", 2), "the base is kept from here");
    fs::rename(s.home.join(".dsh"), s.home.join(".dsh-old")).unwrap();
    c.walk_path("/dsh", 2).assert_error("file does not exist");
    let r = c.walk(1, 3, &["default"]);
    assert!(r.error().is_some(), "walked beneath the renamed base: {:?}", r.msg());
}

#[test]
fn a_root_that_is_removed_disappears() {
    let s = Scratch::new();
    s.home_file(".dsh/profiles/default/package.json", b"{}\n");
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert!(c.reaches("/dsh/profiles", 1));
    fs::remove_dir_all(s.home.join(".dsh")).unwrap();
    assert!(!names(&c.list("/", 1, 4096)).contains(&"dsh".to_string()));
    c.walk_path("/dsh", 1).assert_error("file does not exist");
}

#[test]
fn a_pinned_root_is_served_instead_of_the_home_one() {
    let s = Scratch::new();
    s.home_file(".hermes/SOUL.md", b"the home one\n");
    let pinned = s.outside_file("elsewhere/hermes/SOUL.md", b"the pinned one\n");
    let spec = format!("hermes={}", arg(pinned.parent().unwrap()));
    let d = Daemon::start_in(&s, &["--root", &spec]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.cat("/hermes/SOUL.md", 1), b"the pinned one\n");
}

#[test]
fn a_pinned_root_that_does_not_exist_yet_appears_once_created() {
    let s = Scratch::new();
    let later = s.root.join("later-codex");
    let spec = format!("codex={}", arg(&later));
    let d = Daemon::start_in(&s, &["--root", &spec]);
    let mut c = d.session(Dialect::P2000);
    assert!(!names(&c.list("/", 1, 4096)).contains(&"codex".to_string()));
    fs::create_dir_all(later.join("sessions/2026")).unwrap();
    fs::write(later.join("history.jsonl"), b"h\n").unwrap();
    assert!(names(&c.list("/", 1, 4096)).contains(&"codex".to_string()));
    assert_eq!(c.cat("/codex/history", 1), b"h\n");
}

#[test]
fn a_base_that_is_a_symlink_is_followed_because_it_is_configuration() {
    let s = Scratch::new();
    let real = s.outside_file("real-hermes/SOUL.md", b"through the base link\n");
    s.home_symlink(".hermes", real.parent().unwrap());
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.cat("/hermes/SOUL.md", 1), b"through the base link\n");
}

#[test]
fn an_unknown_root_name_is_a_usage_error_exiting_2() {
    let s = Scratch::new();
    let sock = s.root.join("sock");
    let mut d = Daemon::spawn(&s, &["--no-post", "--unix", arg(&sock), "--root", "unknown=/x"]);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert_eq!(status.code(), Some(2), "stderr:\n{}", d.stderr());
    assert!(d.stderr().contains("unknown"), "{}", d.stderr());
    assert!(!sock.exists(), "a refused start must not listen");
}

#[test]
fn a_root_spec_without_an_equals_sign_is_a_usage_error_exiting_2() {
    let s = Scratch::new();
    let sock = s.root.join("sock");
    let mut d = Daemon::spawn(&s, &["--no-post", "--unix", arg(&sock), "--root", "claude"]);
    assert_eq!(d.wait_exit(EXIT_DEADLINE).code(), Some(2), "stderr:\n{}", d.stderr());
}

/// A directory of `n` files under ~/.hermes/many.
fn many(s: &Scratch, n: usize) {
    for i in 0..n {
        s.home_file(&format!(".hermes/many/file-{i:03}-{}.txt", "x".repeat(i % 17)), format!("{i}\n").as_bytes());
    }
}

#[test]
fn a_directory_over_max_dir_entries_answers_the_error_never_a_short_listing() {
    let s = Scratch::new();
    many(&s, 4);
    s.home_file(".hermes/three/a", b"a");
    s.home_file(".hermes/three/b", b"b");
    s.home_file(".hermes/three/c", b"c");
    let d = Daemon::start_in(&s, &["--max-dir-entries", "3"]);
    let mut c = d.session(Dialect::P2000);
    c.walk_path("/hermes/many", 1).qids();
    c.open(1, OREAD).assert_error(nineagents::errors::Error::DirTooLarge.text());
    c.read(1, 0, 4096).expect_error();
    assert_eq!(names(&c.list("/hermes/three", 2, 4096)), ["a", "b", "c"], "a directory at the cap lists whole");
}

#[test]
fn the_dir_too_large_error_carries_enobufs_in_nine_p_2000_u() {
    let s = Scratch::new();
    many(&s, 4);
    let d = Daemon::start_in(&s, &["--max-dir-entries", "3"]);
    let mut c = d.session(Dialect::P2000u);
    c.walk_path("/hermes/many", 1).qids();
    let (_, errno) = c.open(1, OREAD).expect_error();
    assert_eq!(errno, libc::ENOBUFS as u32);
}

#[test]
fn a_listing_read_in_several_small_reads_equals_the_one_read_listing() {
    let s = Scratch::new();
    many(&s, 60);
    s.home_dir(".hermes/many/a-subdir");
    let d = Daemon::start_in(&s, &[]);
    for dialect in [Dialect::P2000, Dialect::P2000u] {
        let mut c = d.session(dialect);
        let whole = c.list("/hermes/many", 1, SESSION_MSIZE - IOHDRSZ);
        assert_eq!(whole.len(), 61);
        let widest = whole.iter().map(|e| e.wire_len).max().unwrap() as u32;
        for count in [widest, widest + 1, 2 * widest - 1, 333, 1000] {
            assert_eq!(c.list("/hermes/many", 1, count), whole, "reads of {count} bytes over {dialect:?}");
        }
    }
}

#[test]
fn a_listing_is_sorted_by_name() {
    let s = Scratch::new();
    for name in ["zeta", "Alpha", "beta", "_under", "0zero", "-dash", "beta.2"] {
        s.home_file(&format!(".dsh/sorted/{name}"), name.as_bytes());
    }
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let listed: Vec<String> = c.list("/dsh/sorted", 1, 4096).into_iter().map(|e| e.name.clone()).collect();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(listed, sorted);
    assert_eq!(listed.len(), 7);
}

#[test]
fn names_with_spaces_and_utf8_list_walk_and_read() {
    let s = Scratch::new();
    let long_name = "n".repeat(255);
    let files = [
        "my notes.md".to_string(),
        "café ☕.jsonl".to_string(),
        "日本語/ファイル 1.txt".to_string(),
        " leading and trailing ".to_string(),
        "-starts-with-dash".to_string(),
        long_name.clone(),
    ];
    for (i, f) in files.iter().enumerate() {
        s.home_file(&format!(".hermes/names/{f}"), format!("file {i}\n").as_bytes());
    }
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let listed = names(&c.list("/hermes/names", 1, 8000));
    let mut expected =
        vec![" leading and trailing ", "-starts-with-dash", "café ☕.jsonl", "my notes.md", &long_name, "日本語"];
    expected.sort();
    assert_eq!(listed, expected);
    for (i, f) in files.iter().enumerate() {
        assert_eq!(c.cat(&format!("/hermes/names/{f}"), 2), format!("file {i}\n").as_bytes(), "{f}");
    }
    c.walk_path("/hermes/names/日本語", 3).qids();
    assert_eq!(c.stat_ok(3).name, "日本語");
}

#[test]
fn walking_dot_dot_out_of_a_mirror_climbs_the_tree_not_the_disk() {
    let s = Scratch::new();
    s.home_file(".claude/projects/p/s.jsonl", b"s\n");
    s.home_file(".claude/settings.json", b"DEMO-SECRET-must-never-be-served\n");
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let root_qid = c.stat_ok(ROOT).qid;
    let qids = c.walk_ok(ROOT, 1, &["claude", "projects", "p", "..", "..", "..", "..", ".."]);
    assert_eq!(*qids.last().unwrap(), root_qid, "eight steps, five of them up, end at /");
    let claude = c.walk_ok(ROOT, 2, &["claude"])[0];
    let up = c.walk_ok(ROOT, 3, &["claude", "projects", ".."]);
    assert_eq!(up[2], claude, "projects/.. is /claude, not ~/.claude's contents");
    c.walk(3, 4, &["settings.json"]).assert_error("file does not exist");
}

#[test]
fn a_mount_whose_target_is_not_a_directory_has_nothing_below_it() {
    let s = Scratch::new();
    s.home_file(".claude/projects", b"not a directory\n");
    s.home_file(".claude/history.jsonl", b"h\n");
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert!(!c.reaches("/claude/projects/x", 1));
    assert_eq!(c.cat("/claude/history", 2), b"h\n", "the session still serves");
}

#[test]
fn the_history_mount_is_a_file_with_its_real_size() {
    let s = Scratch::new();
    let history = b"{\"display\":\"hello\"}\n{\"display\":\"again\"}\n";
    s.home_file(".claude/history.jsonl", history);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_path("/claude/history", 1).qids();
    let st = c.stat_ok(1);
    assert_eq!((st.name.as_str(), st.length, st.mode, st.qid.ty), ("history", history.len() as u64, 0o444, QTFILE));
}

#[test]
fn a_name_that_is_not_utf8_breaks_neither_its_listing_nor_its_siblings() {
    use std::os::unix::ffi::OsStrExt;
    let s = Scratch::new();
    s.home_file(".hermes/mixed/plain.txt", b"plain\n");
    let odd = s.home_dir(".hermes/mixed").join(std::ffi::OsStr::from_bytes(b"latin1-\xe9.txt"));
    fs::write(&odd, b"odd\n").unwrap();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let listed = c.list("/hermes/mixed", 1, 4096);
    assert!(listed.iter().any(|e| e.name == "plain.txt"), "{listed:?}");
    assert_eq!(c.cat("/hermes/mixed/plain.txt", 2), b"plain\n");
}

#[test]
fn a_pinned_root_whose_own_path_has_an_excluded_word_is_still_served() {
    // The exclusions apply to the names below a root; the base is
    // configuration.
    let s = Scratch::new();
    let soul = s.outside_file("auth-token-secret/hermes/SOUL.md", b"soul\n");
    let spec = format!("hermes={}", arg(soul.parent().unwrap()));
    let d = Daemon::start_in(&s, &["--root", &spec]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.cat("/hermes/SOUL.md", 1), b"soul\n");
}
