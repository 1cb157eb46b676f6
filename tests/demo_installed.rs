//! `--demo` from an installed binary: the demo tree is built into the
//! binary (build.rs, src/demo.rs), so a copy of it far from the source
//! tree, run from elsewhere with nothing of Cargo's in its environment,
//! serves the demo — from a private directory it unpacks under
//! `$XDG_RUNTIME_DIR` and removes at exit — with every credential hidden
//! and the demo's fake agent live under /active.
//!
//! The repository cannot be taken away from under a test, so two more
//! things stand in for that: the served files are shown to come from the
//! unpacked copy (a change made there is served), and no code the binary
//! runs names `CARGO_MANIFEST_DIR`.

mod common;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;

const TRANSCRIPT: &str = "/claude/projects/-home-demo-src-9agents/4462ebfc-5f91-4ef0-9cfb-ac6e7687a66e.jsonl";

/// A copy of the binary in `scratch` (`bin/9agents`), started with
/// `--demo` from its home, posted in its runtime dir.
fn installed_demo(scratch: &Arc<Scratch>) -> Daemon {
    let bin = scratch.root.join("bin");
    fs::create_dir(&bin).unwrap();
    let copy = bin.join("9agents");
    fs::copy(BIN, &copy).expect("copy the binary");
    let mut cmd = scratch.command_of(&copy);
    cmd.arg("--demo");
    let mut d = Daemon::spawn_command(scratch, cmd);
    let posted = scratch.post_path("agents");
    poll(START_DEADLINE, || UnixStream::connect(&posted).ok())
        .unwrap_or_else(|| panic!("the copied binary did not post; stderr:\n{}", d.stderr()));
    d.socket = Some(posted);
    d
}

/// The directories `--demo` unpacked under `runtime`.
fn unpacked(runtime: &Path) -> Vec<PathBuf> {
    let entries = fs::read_dir(runtime).unwrap().map(|e| e.unwrap());
    entries.filter(|e| e.file_name().to_string_lossy().starts_with("9agents-demo.")).map(|e| e.path()).collect()
}

#[test]
fn a_copied_binary_run_from_elsewhere_serves_the_demo_and_never_a_credential() {
    let s = Scratch::new();
    let d = installed_demo(&s);
    let mut c = d.session(Dialect::P2000);
    let crawled = c.crawl("/");
    assert!(crawled.len() > 40, "the demo tree is small, not empty: {} entries", crawled.len());
    for x in &crawled {
        assert!(!contains(x.path.as_bytes(), b"DEMO-SECRET"), "{}", x.path);
        if let Ok(data) = &x.data {
            assert!(!contains(data, SECRET), "{} served a demo secret", x.path);
        }
    }
    let on_disk = fs::read(disk_path(&demo_home(), TRANSCRIPT).unwrap()).unwrap();
    assert_eq!(c.cat(TRANSCRIPT, 1), on_disk);
}

#[test]
fn the_installed_demos_fake_agent_is_live_under_active() {
    let s = Scratch::new();
    let d = installed_demo(&s);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(names(&c.list("/active/claude", 1, 4096)), ["48213", "48377"]);
    assert_eq!(c.cat("/active/claude/48213/cwd", 1), b"/home/demo/src/9agents\n");
    let chat = c.list("/active/claude/48213/chat", 1, 8192);
    assert!(!chat.is_empty(), "the fake agent's chat lists no message");
    // The second waits on the user, and says for what; the first does not.
    assert_eq!(c.cat("/active/claude/48377/status", 1), b"waiting\n");
    assert_eq!(c.cat("/active/claude/48377/waiting_for", 1), b"dialog open\n");
    assert_eq!(c.cat("/active/claude/48377/kind", 1), b"interactive\n");
    assert!(!names(&c.list("/active/claude/48213", 1, 4096)).iter().any(|n| n == "waiting_for"));
}

#[test]
fn the_installed_demo_serves_its_private_unpacked_copy_and_removes_it_at_exit() {
    let s = Scratch::new();
    let mut d = installed_demo(&s);
    let dirs = unpacked(&s.runtime);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let dir = &dirs[0];
    assert_eq!(fs::symlink_metadata(dir).unwrap().mode() & 0o777, 0o700, "{} is not private", dir.display());
    // What is served is the copy: a line added to it is served at once.
    let history = dir.join("home/.claude/history.jsonl");
    let mut grown = fs::read(&history).unwrap();
    grown.extend_from_slice(b"{\"display\":\"only in the unpacked copy\"}\n");
    fs::write(&history, &grown).unwrap();
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.cat("/claude/history", 1), grown);
    drop(c);
    d.signal(libc::SIGTERM);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert!(status.success(), "{status}; stderr:\n{}", d.stderr());
    assert!(!dir.exists(), "{} outlived the daemon", dir.display());
}

#[test]
fn a_demo_that_cannot_start_leaves_no_unpacked_copy_behind() {
    let s = Scratch::new();
    let _first = installed_demo(&s);
    let before = unpacked(&s.runtime);
    // The name is taken: the second demo unpacks, fails to post, and exits.
    let mut second = Daemon::spawn(&s, &["--demo"]);
    let status = second.wait_exit(EXIT_DEADLINE);
    assert!(!status.success(), "a second demo on a taken name exited {status}");
    assert_eq!(unpacked(&s.runtime), before, "stderr:\n{}", second.stderr());
}

#[test]
fn no_code_the_binary_runs_names_cargo_manifest_dir() {
    // Tests may read the source tree; what the binary runs may not, or an
    // installed binary looks for a directory that is not there. Test code
    // is a `tests.rs`, a `tests/` directory, or follows `#[cfg(test)]`.
    fn scan(dir: &Path, found: &mut Vec<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "tests" {
                    scan(&path, found);
                }
            } else if name.ends_with(".rs") && name != "tests.rs" {
                let text = fs::read_to_string(&path).unwrap();
                let runs = text.split("#[cfg(test)]").next().unwrap();
                for (i, line) in runs.lines().enumerate() {
                    if line.contains("CARGO_MANIFEST_DIR") {
                        found.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    scan(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut found);
    assert!(found.is_empty(), "the binary would read the build directory at run time:\n{}", found.join("\n"));
}

/// `demo/change` (run as the demo's README says, in the demo's runtime
/// dir), its output.
fn demo_change(s: &Scratch, args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/change");
    let out = s.command_of(&script).args(args).output().expect("run demo/change");
    assert!(out.status.success(), "demo/change {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn demo_change_makes_the_fake_agents_wait_answer() {
    let s = Scratch::new();
    let d = installed_demo(&s);
    let mut c = d.session(Dialect::P2000);
    let before = c.list("/active/claude/48213/chat", 1, 8192).len();
    c.walk_path("/active/claude/48213/wait", 2);
    c.open_ok(2, OREAD);
    let next = |c: &mut Conn, change: &[&str]| {
        let tag = c.tag();
        c.send(tag, &Tmsg::Read { fid: 2, offset: 0, count: 4096 });
        demo_change(&s, change);
        let r = c.recv();
        assert_eq!(r.tag(), tag);
        String::from_utf8(r.data()).unwrap()
    };
    assert_eq!(next(&mut c, &["status"]), "status idle\n", "the demo's agent starts busy");
    assert_eq!(next(&mut c, &["message", r#"say "hi" \o/"#]), format!("message {before:08}-user\n"));
    let last = format!("/active/claude/48213/chat/{before:08}-user");
    assert_eq!(c.cat(&last, 3), b"say \"hi\" \\o/\n");
    assert_eq!(next(&mut c, &["status", "waiting"]), "status waiting\n");
}

#[test]
fn demo_change_with_no_demo_running_says_so() {
    let s = Scratch::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/change");
    let out = s.command_of(&script).arg("status").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is 9agents --demo running?"), "{out:?}");
}
