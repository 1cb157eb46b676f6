//! Interop on the mirror: py9p reads the whole demo tree over 9P2000 and
//! 9P2000.u (`tests/interop/py9p_demo_check.py`) and compares every byte
//! with the disk, including a demo transcript by name.
//!
//! Same rule as tests/interop.rs: without py9p the test fails on CI (`CI`
//! set) and otherwise says how to get it and passes. `PYTHON` names the
//! interpreter (default `python3`).

mod common;

use std::process::Command;

use common::*;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/py9p_demo_check.py");

#[test]
fn py9p_reads_the_whole_demo_tree_byte_for_byte_over_both_dialects_and_never_a_secret() {
    if !py9p_available() {
        return;
    }
    let s = Scratch::new();
    let proc_dir = s.empty_proc();
    let d = Daemon::start_in(&s, &["--demo", "--proc", &proc_dir]);
    let sock = d.socket.clone().expect("a Unix socket");
    let mut cmd = Command::new(python());
    cmd.arg("-B").arg(SCRIPT).args(["--socket", arg(&sock), "--demo-home", arg(&demo_home())]);
    for (tree, rel) in MOUNTS {
        cmd.arg("--mount").arg(format!("{tree}={rel}"));
    }
    let out = cmd.env("PYTHONDONTWRITEBYTECODE", "1").output().expect("run the interop script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "py9p_demo_check.py exited {}:\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains("interop: every demo check held"), "{stdout}");
}
