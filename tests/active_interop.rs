//! Interop on /active: py9p (`tests/interop/py9p_active_check.py`) lists
//! the agents and reads every field over 9P2000 and 9P2000.u, against real
//! processes (a claude by its registry record, a codex by the rollout it
//! holds) and against a fixture `<proc>` with every harness.
//!
//! Same rule as tests/interop.rs: without py9p the test fails on CI (`CI`
//! set) and otherwise says how to get it and passes.

mod active_fakes;
mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;

use active_fakes::*;
use common::*;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/py9p_active_check.py");

/// What py9p must see: listings holding names, files holding bytes, and
/// agent directories to stat and read entry by entry.
#[derive(Default)]
struct Expect {
    lists: BTreeMap<String, Vec<String>>,
    files: BTreeMap<String, String>,
    dirs: Vec<String>,
}

impl Expect {
    fn agent(&mut self, harness: &str, pid: u32, fields: &[(&str, String)]) {
        let dir = format!("/active/{harness}/{pid}");
        self.lists.entry(format!("/active/{harness}")).or_default().push(pid.to_string());
        for (field, text) in fields {
            self.files.insert(format!("{dir}/{field}"), text.clone());
        }
        self.dirs.push(dir);
    }

    fn json(&self) -> String {
        let lists: Vec<String> = self
            .lists
            .iter()
            .map(|(k, v)| {
                format!("{}: [{}]", json_str(k), v.iter().map(|n| json_str(n)).collect::<Vec<_>>().join(", "))
            })
            .collect();
        let files: Vec<String> = self.files.iter().map(|(k, v)| format!("{}: {}", json_str(k), json_str(v))).collect();
        let dirs: Vec<String> = self.dirs.iter().map(|d| json_str(d)).collect();
        format!(
            "{{\"lists\": {{{}}}, \"files\": {{{}}}, \"dirs\": [{}]}}",
            lists.join(", "),
            files.join(", "),
            dirs.join(", ")
        )
    }
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn check(d: &Daemon, scratch: &Scratch, expect: &Expect) {
    let file = scratch.root.join("expect.json");
    fs::write(&file, expect.json()).unwrap();
    let sock = d.socket.clone().expect("a Unix socket");
    let out = Command::new(python())
        .arg("-B")
        .arg(SCRIPT)
        .args(["--socket", arg(&sock), "--expect", arg(&file)])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run the interop script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "py9p_active_check.py exited {}:\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains("interop: every /active check held"), "{stdout}");
}

fn line(s: &str) -> String {
    format!("{s}\n")
}

fn text(path: &Path) -> String {
    String::from_utf8(fs::read(path).unwrap()).unwrap()
}

#[test]
fn py9p_lists_real_agents_and_reads_every_field_over_both_dialects() {
    if !py9p_available() {
        return;
    }
    let w = Live::new();
    let (claude, transcript) = w.claude();
    let (codex, rollout) = w.codex();
    let d = w.daemon();
    let mut e = Expect::default();
    let cwd = line(arg(&w.work));
    let ppid = line(&std::process::id().to_string());
    e.agent(
        "claude",
        claude.pid,
        &[
            ("pid", line(&claude.pid.to_string())),
            ("ppid", ppid.clone()),
            ("started", line(&started_of(claude.pid).to_string())),
            ("cwd", cwd.clone()),
            ("name", line(CLAUDE_NAME)),
            ("title", line(CLAUDE_TITLE)),
            ("session", line(CLAUDE_SID)),
            ("model", line(CLAUDE_MODEL)),
            ("via", line("registry")),
            ("zmx", line(ZMX)),
            ("status", line(CLAUDE_STATUS)),
            ("transcript", text(&transcript)),
        ],
    );
    e.agent(
        "codex",
        codex.pid,
        &[
            ("pid", line(&codex.pid.to_string())),
            ("ppid", ppid),
            ("started", line(&started_of(codex.pid).to_string())),
            ("cwd", cwd),
            ("title", line(CODEX_TITLE)),
            ("session", line(CODEX_ID)),
            ("model", line(CODEX_MODEL)),
            ("via", line("fd")),
            ("zmx", String::new()),
            ("transcript", text(&rollout)),
        ],
    );
    check(&d, &w.scratch, &e);
}

#[test]
fn py9p_lists_fixture_agents_of_every_harness_and_reads_every_field_over_both_dialects() {
    if !py9p_available() {
        return;
    }
    let fx = Fixture::new();
    let agents = fx.populate();
    let d = fx.daemon();
    let mut e = Expect::default();
    for (pid, harness, via) in agents {
        let started = line(&(FAKE_BTIME + fake_start(pid) / 100).to_string());
        e.agent(
            harness,
            pid,
            &[
                ("pid", line(&pid.to_string())),
                ("ppid", line("1")),
                ("started", started),
                ("cwd", line(arg(&fx.cwd))),
                ("via", line(via)),
            ],
        );
    }
    e.files.insert("/active/claude/100/title".into(), line(CLAUDE_TITLE));
    e.files.insert("/active/omp/301/title".into(), line("from the store"));
    check(&d, &fx.scratch, &e);
}
