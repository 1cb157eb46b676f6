//! Interop with a client nobody here wrote: py9p, from the PyPI package
//! p9fs, runs `tests/interop/py9p_check.py` against a daemon this test
//! started, over 9P2000 and 9P2000.u on the Unix socket and through p9fs's
//! fsspec filesystem over TCP.
//!
//! Without py9p the test cannot run. On CI (`CI` set) that is a failure,
//! since `.ci/run` installs it; elsewhere it prints how to get it and
//! passes, so `cargo test` works on a machine without Python.
//! `PYTHON` names the interpreter (default `python3`).

mod common;

use std::process::Command;

use common::*;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/py9p_check.py");

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Is py9p importable? If not: fail on CI, else say how to get it.
fn py9p_available() -> bool {
    let probe = Command::new(python()).args(["-B", "-c", "import py9p.py9p, p9fs"]).output();
    let ok = probe.as_ref().is_ok_and(|o| o.status.success());
    if !ok {
        let why = match &probe {
            Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
            Err(e) => format!("{}: {e}", python()),
        };
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but py9p cannot be imported ({why}); .ci/run should have run `pip install p9fs`"
        );
        // Straight to fd 2, past the test harness's capture, so a passing
        // run still says it skipped.
        let line = format!("interop: skipped: pip install p9fs (py9p cannot be imported: {})\n", why.trim());
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    }
    ok
}

#[test]
fn py9p_lists_the_root_and_reads_readme_and_pid_over_both_dialects() {
    if !py9p_available() {
        return;
    }
    let scratch = Scratch::new();
    let sock = scratch.root.join("interop.sock");
    let port = free_tcp_port();
    let tcp = format!("127.0.0.1:{port}");
    let d = Daemon::spawn(&scratch, &["--no-post", "--unix", arg(&sock), "--tcp", &tcp]);
    let up = poll(START_DEADLINE, || (std::net::TcpStream::connect(&tcp).is_ok() && is_socket(&sock)).then_some(()));
    assert!(up.is_some(), "the daemon did not listen; stderr:\n{}", d.stderr());
    let expected = scratch.root.join("README.expected");
    std::fs::write(&expected, readme()).unwrap();

    let out = Command::new(python())
        .arg("-B")
        .arg(SCRIPT)
        .args(["--socket", arg(&sock), "--readme", arg(&expected)])
        .args(["--pid", &d.pid.to_string(), "--tcp-port", &port.to_string()])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run the interop script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "py9p_check.py exited {}:\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains("interop: every check held"), "{stdout}");
}
