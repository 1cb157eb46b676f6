//! diod's own tools against 9agents: `diodls`, `diodls -l` and `diodcat`
//! (Debian's `diod` package, 1.0.24) speak only 9P2000.L, through diod's
//! client library, not ours, so they are an independent check of the .L
//! dialect's handshake (Tversion, Tauth answered ENOENT, Tattach), walks,
//! Tgetattr, Treaddir and Tread. They take `-s PATH` for a unix socket, or
//! `-s HOST:PORT` for TCP, and `-a ANAME` for the attach name, which
//! defaults to `ctl`: the daemon serves only the empty one, so each call
//! here passes `-a ''`.
//!
//! `diodload -g` cannot be pointed anywhere but `ctl`: it attaches the aname
//! `ctl` and walks `null` (diod's synthetic control file system), so
//! against 9agents it is refused at the attach; what it prints is checked.
//!
//! Without diod's tools the tests print `diod test SKIPPED: <why>` and
//! pass; with `CI` set they fail instead, because `.ci/run` installs them.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use common::*;

/// Where Debian puts diod's tools (root's PATH has it, a user's may not).
const SBIN: &str = "/usr/sbin";
/// How long a tool may take before it gives up (`-t`): a server that never
/// answers fails the test instead of hanging it.
const TOOL_TIMEOUT_SECS: &str = "20";
/// Larger than the tools' default msize (65536), so `diodcat` needs
/// several reads, and not a multiple of one.
const LARGE_BYTES: usize = 3 * 65536 + 1234;
const PROJECT: &str = "/claude/projects/-src-app";

/// The fixture home's project files: (name, bytes).
fn files() -> Vec<(&'static str, Vec<u8>)> {
    let binary: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    let large: Vec<u8> = (0..LARGE_BYTES).map(|i| (i % 251) as u8).collect();
    vec![
        ("a.jsonl", b"{\"type\":\"user\",\"message\":\"hello\"}\n".to_vec()),
        ("empty", Vec::new()),
        ("binary.bin", binary),
        ("large.bin", large),
        ("name with spaces.txt", b"spaces\n".to_vec()),
    ]
}

/// A home holding `files()` in one project (and a subdirectory), and a
/// daemon on a unix socket serving it.
fn world() -> (Arc<Scratch>, Daemon) {
    let s = Scratch::new();
    for (name, data) in files() {
        s.home_file(&format!(".claude/projects/-src-app/{name}"), &data);
    }
    s.home_file(".claude/projects/-src-app/sub/leaf.txt", b"leaf\n");
    let d = Daemon::start_in(&s, &["--proc", &s.empty_proc()]);
    (s, d)
}

/// The tool's path, or why the test cannot run (a skip, or a failure on CI).
fn tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain([PathBuf::from(SBIN)])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        let why = format!("{name} is missing (apt-get install diod)");
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but the diod test cannot run: {why}; .ci/run must install it"
        );
        eprintln!("diod test SKIPPED: {why}");
    }
    found
}

/// Run diod's `tool` against `server` (a socket path or HOST:PORT) with
/// the empty aname.
fn run(tool: &Path, server: &str, args: &[&str]) -> Output {
    Command::new(tool)
        .args(["-s", server, "-a", "", "-t", TOOL_TIMEOUT_SECS])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", tool.display()))
}

/// stdout of a run that must succeed; its stderr in the failure otherwise.
fn ok(out: Output, what: &str) -> String {
    assert!(out.status.success(), "{what} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("{what} printed non-UTF-8: {e}"))
}

fn sorted(lines: &str) -> Vec<String> {
    let mut v: Vec<String> = lines.lines().map(str::to_owned).collect();
    v.sort();
    v
}

#[test]
fn diodls_lists_the_root_and_a_project_directory_as_the_daemon_serves_them() {
    let Some(diodls) = tool("diodls") else { return };
    let (_s, d) = world();
    let sock = arg(d.socket.as_ref().unwrap()).to_owned();

    let root = sorted(&ok(run(&diodls, &sock, &["/"]), "diodls /"));
    let ours = sorted(&String::from_utf8(d.client(&["ls", "-a", &format!("unix!{sock}"), "/"]).stdout).unwrap());
    assert_eq!(root, ours, "diodls / and 9agents ls / differ");
    for name in ["README", "active", "claude"] {
        assert!(root.iter().any(|l| l == name), "diodls / lists no {name}: {root:?}");
    }

    let listed = sorted(&ok(run(&diodls, &sock, &[PROJECT]), "diodls of the project"));
    let mut want: Vec<String> = files().iter().map(|(n, _)| n.to_string()).chain(["sub".to_string()]).collect();
    want.sort();
    assert_eq!(listed, want);
    assert_eq!(ok(run(&diodls, &sock, &[&format!("{PROJECT}/sub")]), "diodls of sub"), "leaf.txt\n");
}

/// One `diodls -l` line: `MODE NLINK UID GID SIZE MON DAY HH:MM NAME`
/// (the name may hold spaces): (mode, size, name).
fn long_line(line: &str) -> (String, u64, String) {
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert!(fields.len() >= 9 && fields[7].contains(':'), "not a diodls -l line: {line:?}");
    let at = line.find(fields[7]).unwrap() + fields[7].len();
    let name = line[at..].trim_start().to_string();
    (fields[0].to_string(), fields[4].parse().unwrap_or_else(|_| panic!("size in {line:?}")), name)
}

#[test]
fn diodls_l_shows_every_entry_with_its_type_and_size() {
    let Some(diodls) = tool("diodls") else { return };
    let (_s, d) = world();
    let sock = arg(d.socket.as_ref().unwrap()).to_owned();

    let out = ok(run(&diodls, &sock, &["-l", PROJECT]), "diodls -l of the project");
    // diod serves a directory's `.` and `..` (Linux's readdir returns them);
    // 9agents, like a 9P2000 server, lists only what the directory holds.
    let mut got: Vec<(String, u64, String)> =
        out.lines().map(long_line).filter(|(_, _, n)| n != "." && n != "..").collect();
    got.sort_by(|a, b| a.2.cmp(&b.2));
    let names: Vec<&str> = got.iter().map(|g| g.2.as_str()).collect();
    let mut want_names: Vec<&str> = files().iter().map(|(n, _)| *n).chain(["sub"]).collect();
    want_names.sort();
    assert_eq!(names, want_names, "diodls -l printed:\n{out}");
    for (mode, size, name) in &got {
        match files().iter().find(|(n, _)| n == name) {
            Some((_, data)) => {
                assert_eq!(*size, data.len() as u64, "{name}: {out}");
                assert!(mode.starts_with("-r--r--r--"), "{name} is shown {mode}, not read-only: {out}");
            }
            None => assert!(mode.starts_with('d'), "{name} is not shown as a directory: {out}"),
        }
    }
}

#[test]
fn diodcat_reads_every_file_byte_for_byte() {
    let Some(diodcat) = tool("diodcat") else { return };
    let (_s, d) = world();
    let sock = arg(d.socket.as_ref().unwrap()).to_owned();

    for (name, data) in files() {
        let out = run(&diodcat, &sock, &[&format!("{PROJECT}/{name}")]);
        assert!(out.status.success(), "diodcat {name} ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout == data, "diodcat {name}: {} bytes, not the fixture's {}", out.stdout.len(), data.len());
    }
    let out = run(&diodcat, &sock, &[&format!("{PROJECT}/a.jsonl"), &format!("{PROJECT}/sub/leaf.txt")]);
    assert_eq!(ok(out, "diodcat of two files"), "{\"type\":\"user\",\"message\":\"hello\"}\nleaf\n");
}

#[test]
fn diodls_and_diodcat_work_over_tcp_too() {
    let (Some(diodls), Some(diodcat)) = (tool("diodls"), tool("diodcat")) else { return };
    let d = Daemon::start_tcp(&[]);
    d.scratch.home_file(".claude/projects/-src-app/a.jsonl", b"over tcp\n");
    let server = d.tcp.unwrap().to_string();

    let root = ok(run(&diodls, &server, &["/"]), "diodls / over TCP");
    assert!(root.lines().any(|l| l == "claude"), "diodls / over TCP: {root}");
    assert_eq!(ok(run(&diodcat, &server, &[&format!("{PROJECT}/a.jsonl")]), "diodcat over TCP"), "over tcp\n");
}

#[test]
fn diodload_g_and_diods_default_aname_are_refused_at_the_attach() {
    let (Some(diodload), Some(diodls)) = (tool("diodload"), tool("diodls")) else { return };
    let (_s, d) = world();
    let sock = arg(d.socket.as_ref().unwrap()).to_owned();

    // diodload takes no aname: every thread attaches "ctl", then walks "null".
    let out = Command::new(&diodload).args(["-s", &sock, "-g", "-n", "1", "-r", "1"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    eprintln!("diodload -g against 9agents printed: {}", said.trim());
    assert!(said.contains("error attaching to aname=ctl: No such file or directory"), "diodload -g: {said}");
    assert!(said.contains(" 0 ops/s"), "diodload -g did some work: {said}");

    let out = Command::new(&diodls).args(["-s", &sock, "-t", TOOL_TIMEOUT_SECS, "/"]).output().unwrap();
    assert!(!out.status.success(), "diodls with its default aname ctl succeeded");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("aname='ctl': No such file or directory"), "diodls -a ctl: {said}");
}
