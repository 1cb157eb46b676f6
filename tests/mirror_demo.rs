//! The demo home (issue 3, "The demo home" and "Done when"): `9agents
//! --demo` serves `demo/home`, the built-in client shows its sessions, and
//! nothing the daemon serves, anywhere in the tree, holds the bytes every
//! credential-shaped file of the demo holds (demo/README.md).

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::*;

/// The project directories of the demo's `.claude/projects`.
const PROJECTS: [&str; 3] = ["-home-demo-notes-2026-plans", "-home-demo-src-9agents", "-home-demo-src-webshop"];
/// Names that must never show: the demo's credentials, its symlinks, and
/// what only a leak would bring in.
const NEVER: [&str; 12] = [
    ".env",
    "my-token.txt",
    "passwd.jsonl",
    ".credentials.json",
    "settings.json",
    "auth.json",
    "id_ed25519",
    "server.pem",
    "api.key",
    "root:",
    "DEMO-SECRET",
    "statsig",
];

fn ls(d: &Daemon, path: &str) -> String {
    let out = d.client(&["ls", "-l", path]);
    assert!(out.status.success(), "9agents ls -l {path}: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("ls prints UTF-8")
}

#[test]
fn demo_then_ls_l_claude_projects_shows_the_demo_sessions_and_no_credentials() {
    let s = Scratch::new();
    let d = Daemon::posted(&s, &["--demo"]);
    let projects = ls(&d, "/claude/projects");
    let listed: Vec<&str> = projects.lines().filter_map(|l| l.split_whitespace().last()).collect();
    assert_eq!(listed, PROJECTS, "{projects}");
    assert!(projects.lines().all(|l| l.starts_with('d')), "every project is a directory:\n{projects}");
    let mut sessions = Vec::new();
    for p in PROJECTS {
        let text = ls(&d, &format!("/claude/projects/{p}"));
        for never in NEVER {
            assert!(!text.contains(never), "ls -l /claude/projects/{p} shows {never}:\n{text}");
        }
        sessions.extend(
            text.lines()
                .filter_map(|l| l.split_whitespace().last())
                .filter(|n| n.ends_with(".jsonl"))
                .map(String::from),
        );
    }
    sessions.sort();
    let expected: Vec<String> = PROJECTS
        .iter()
        .flat_map(|p| fs::read_dir(demo_home().join(".claude/projects").join(p)).unwrap())
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file() && e.file_name().to_string_lossy().ends_with(".jsonl"))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(expected.len(), 5, "the demo has five transcripts: {expected:?}");
    assert_eq!(sessions, expected);
    for never in NEVER {
        assert!(!projects.contains(never), "ls -l /claude/projects shows {never}:\n{projects}");
    }
}

#[test]
fn demo_cat_of_a_transcript_is_the_file_on_disk() {
    let s = Scratch::new();
    let d = Daemon::posted(&s, &["--demo"]);
    let path = "/claude/projects/-home-demo-src-9agents/4462ebfc-5f91-4ef0-9cfb-ac6e7687a66e.jsonl";
    let out = d.client(&["cat", path]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, fs::read(disk_path(&demo_home(), path).unwrap()).unwrap());
}

/// Every regular file of the demo home a mount reaches, by tree path, with
/// its bytes: what the daemon should serve if the exclusions hid exactly
/// the files holding `SECRET` (the demo keeps the two sets equal) and
/// symlinks were never followed.
fn expected_demo_files() -> BTreeMap<String, Vec<u8>> {
    fn walk(disk: &Path, tree: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        let m = fs::symlink_metadata(disk).unwrap();
        if m.file_type().is_symlink() {
            return;
        }
        if m.is_dir() {
            for e in fs::read_dir(disk).unwrap() {
                let e = e.unwrap();
                walk(&e.path(), &join_tree(tree, &e.file_name().to_string_lossy()), out);
            }
        } else {
            let data = fs::read(disk).unwrap();
            if !contains(&data, SECRET) {
                out.insert(tree.to_string(), data);
            }
        }
    }
    let mut out = BTreeMap::new();
    for (mount, rel) in MOUNTS {
        walk(&demo_home().join(rel), mount, &mut out);
    }
    out
}

#[test]
fn a_crawl_of_the_whole_demo_tree_never_returns_a_secret_and_serves_every_other_file_exactly() {
    let s = Scratch::new();
    let proc_dir = s.empty_proc();
    let _d = Daemon::posted(&s, &["--demo", "--proc", &proc_dir]);
    let expected = expected_demo_files();
    assert!(expected.len() > 25, "{:?}", expected.keys());
    for dialect in [Dialect::P2000, Dialect::P2000u] {
        let mut c = Conn::unix(&s.post_path("agents"));
        c.handshake(dialect);
        let crawled = c.crawl("/");
        let mut served = BTreeMap::new();
        for x in crawled {
            assert!(!contains(x.path.as_bytes(), b"DEMO-SECRET"), "{}", x.path);
            let data = x.data.unwrap_or_else(|e| panic!("{}: {e}", x.path));
            assert!(!contains(&data, SECRET), "{} served a demo secret over {dialect:?}", x.path);
            if x.entry.mode & DMDIR == 0 && disk_path(&demo_home(), &x.path).is_some() {
                served.insert(x.path, data);
            }
        }
        let served_names: Vec<&String> = served.keys().collect();
        let expected_names: Vec<&String> = expected.keys().collect();
        assert_eq!(served_names, expected_names, "over {dialect:?}");
        assert!(served == expected, "a served file differs from the disk over {dialect:?}");
    }
}

#[test]
fn the_demo_shows_every_root_and_the_skills_union() {
    let s = Scratch::new();
    let _d = Daemon::posted(&s, &["--demo"]);
    let mut c = Conn::unix(&s.post_path("agents"));
    c.handshake(Dialect::P2000);
    let root = names(&c.list("/", 1, 4096));
    for name in ["claude", "codex", "dsh", "hermes", "omp", "skills"] {
        assert!(root.contains(&name.to_string()), "{name} missing from {root:?}");
    }
    assert_eq!(names(&c.list("/skills", 1, 4096)), ["claude", "codex", "omp"]);
    assert_eq!(names(&c.list("/claude", 1, 4096)), ["history", "projects", "skills"]);
    assert_eq!(names(&c.list("/codex", 1, 4096)), ["history", "session-index", "sessions"]);
}

/// A process whose `argv[0]` is `claude`, as /active recognises an agent:
/// `sleep`, renamed, killed and reaped when dropped.
struct FakeAgent(std::process::Child);

impl FakeAgent {
    fn start() -> FakeAgent {
        use std::os::unix::process::CommandExt;
        let child = std::process::Command::new("sleep").arg0("claude").arg("60").spawn().expect("spawn sleep");
        FakeAgent(child)
    }
}

impl Drop for FakeAgent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_demo_shows_no_agent_of_the_machine_it_runs_on() {
    // The demo reads its own process table (demo/proc: two fake agents,
    // 48213 and 48377). A real agent running on the machine must not show up in the
    // demo, or the demo serves the machine's sessions.
    let agent = FakeAgent::start();
    let s = Scratch::new();
    let _d = Daemon::posted(&s, &["--demo"]);
    let mut c = Conn::unix(&s.post_path("agents"));
    c.handshake(Dialect::P2000);
    let pid = agent.0.id().to_string();
    let mut shown: Vec<String> =
        c.try_list("/active/claude", 1, 4096).unwrap_or_default().into_iter().map(|e| e.name.clone()).collect();
    shown.sort();
    assert!(!shown.contains(&pid), "the demo's /active/claude lists this machine's process {pid}: {shown:?}");
    assert_eq!(shown, ["48213", "48377"], "the demo's /active/claude lists only its own fake agents");
}
