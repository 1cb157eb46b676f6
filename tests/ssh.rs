//! `ssh!HOST` and `9agents --stdio` (issue 24) through a real sshd:
//! Debian's openssh-server, started here on a loopback port with its own
//! host key, its own authorized key and a scratch config, whose sessions
//! see the scratch home and runtime directory (`SetEnv`), never the real
//! ones. The client finds `ssh` first on a `PATH` whose `ssh` adds the
//! scratch client config (`-F`).

mod common;
mod sshd;

use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use sshd::{tools, Sshd};

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_remote_host_is_read_over_ssh_through_its_posted_daemon_byte_for_byte() {
    if tools().is_none() {
        return;
    }
    let s = Scratch::new();
    let d = Daemon::posted(&s, &["--demo"]);
    let sshd = Sshd::start(&s);
    let out = sshd.client(&s, &["ls", "-a", "ssh!remote1", "/active/claude"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out).lines().collect::<Vec<_>>(), ["48213", "48377"], "{out:?}");
    // A chat message over ssh is the one a local client reads.
    let local = format!("unix!{}", s.post_path("agents").display());
    let listed = d.client(&["ls", "-a", &local, "/active/claude/48213/chat"]);
    let first = text(&listed).lines().next().unwrap().to_string();
    let path = format!("/active/claude/48213/chat/{first}");
    let there = sshd.client(&s, &["cat", "-a", "ssh!remote1", &path]);
    let here = d.client(&["cat", "-a", &local, &path]);
    assert!(there.status.success() && !there.stdout.is_empty(), "{there:?}");
    assert_eq!(there.stdout, here.stdout, "byte for byte");
    // The remote reader shared the posted daemon: its session went through
    // it, and no daemon of its own was left behind.
    let stray = poll(Duration::from_secs(10), || {
        let left: Vec<_> = std::fs::read_dir(&s.runtime)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("9agents-stdio-"))
            .collect();
        left.is_empty().then_some(())
    });
    assert!(stray.is_some(), "a --stdio directory was left in the runtime directory");
}

#[test]
fn with_no_daemon_posted_the_remote_session_has_one_of_its_own_that_goes_with_it() {
    if tools().is_none() {
        return;
    }
    let s = Scratch::new();
    s.home_file(".claude/projects/-w/aaaaaaaa-0000-4000-8000-000000000001.jsonl", b"{\"type\":\"user\"}\n");
    let sshd = Sshd::start(&s);
    let out = sshd.client(&s, &["ls", "-a", "ssh!remote1", "/sessions/claude"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out).trim(), "aaaaaaaa-0000-4000-8000-000000000001");
    let gone = poll(Duration::from_secs(10), || {
        let left = std::fs::read_dir(&s.runtime)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().starts_with("9agents-stdio-"));
        (!left).then_some(())
    });
    assert!(gone.is_some(), "its own daemon's directory outlived the session");
}

#[test]
fn a_host_ssh_cannot_reach_is_an_error_saying_so() {
    if tools().is_none() {
        return;
    }
    let s = Scratch::new();
    let sshd = Sshd::start(&s);
    let out = sshd.client(&s, &["ls", "-a", "ssh!nowhere", "/"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ssh!nowhere") || err.contains("Connection refused"), "{err}");
    let bad = sshd.client(&s, &["ls", "-a", "ssh!-oProxyCommand=x", "/"]);
    assert_eq!(bad.status.code(), Some(1), "{bad:?}");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("ssh! needs a host"), "{bad:?}");
}

/// A "host": its scratch home, its daemon posted there, its sshd.
type Host = (Arc<Scratch>, Daemon, Sshd);

/// Two "hosts": two scratch homes, each with its daemon posted and an sshd
/// whose sessions see it, reached as `remote1` and `remote2`.
fn two_hosts() -> Option<(Host, Host)> {
    tools()?;
    let (a, b) = (Scratch::new(), Scratch::new());
    let (da, db) = (Daemon::posted(&a, &["--demo"]), Daemon::posted(&b, &["--demo"]));
    let (sa, sb) = (Sshd::start_as(&a, "remote1"), Sshd::start_as(&b, "remote2"));
    sa.client_config(&[&sa, &sb]);
    Some(((a, da, sa), (b, db, sb)))
}

#[test]
fn several_hosts_in_one_command_each_line_tagged_with_its_host_one_unreachable_said_apart() {
    let Some(((a, _da, sa), _remote2)) = two_hosts() else { return };
    let out = sa.client(&a, &["ls", "-a", "ssh!remote1", "-a", "ssh!remote2", "-a", "ssh!nowhere", "/active/claude"]);
    assert_eq!(out.status.code(), Some(1), "one host failed: {out:?}");
    let mut lines: Vec<String> = text(&out).lines().map(str::to_owned).collect();
    lines.sort();
    assert_eq!(lines, ["remote1\t48213", "remote1\t48377", "remote2\t48213", "remote2\t48377"], "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("9agents: nowhere:"), "{err}");
    // A group of the hosts file: one name, both hosts.
    let config = a.home.join(".config/9agents");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("hosts"), "work ssh!remote1\nwork ssh!remote2\n").unwrap();
    let out = sa.client(&a, &["usage", "-a", "work", "monthly"]);
    assert!(out.status.success(), "{out:?}");
    let t = text(&out);
    assert!(t.starts_with("host "), "{t}");
    for h in ["remote1", "remote2"] {
        assert!(t.lines().any(|l| l.starts_with(h) && l.contains(" all ") && l.contains(" total ")), "{h}: {t}");
    }
    // A search of the group: each host's results, tagged (the demo has one
    // user message that says python).
    let out = sa.client(&a, &["search", "-a", "work", "-i", "python", "kind:user"]);
    assert!(out.status.success(), "{out:?}");
    let found = text(&out);
    let mut hosts: Vec<&str> = Vec::new();
    for l in found.lines() {
        let (host, rest) = l.split_once('\t').unwrap_or_else(|| panic!("untagged: {l:?}"));
        assert!(rest.starts_with("/sessions/codex/") && rest.to_lowercase().contains("python"), "{l:?}");
        hosts.push(host);
    }
    hosts.sort();
    assert_eq!(hosts, ["remote1", "remote2"], "{out:?}");
}

#[test]
fn wait_across_two_hosts_merges_their_lines_and_outlives_one_killed() {
    let Some(((a, _da, sa), (_b, db, _sb))) = two_hosts() else { return };
    let path = format!("{}:{}", sa.bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut child = a
        .command()
        .env("PATH", path)
        .args(["wait", "-a", "ssh!remote1", "-a", "ssh!remote2", "/usage/wait"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_of(child.stdout.take().unwrap());
    let errs = lines_of(child.stderr.take().unwrap());
    // Each host's first read answers at once: its block.
    let both = poll(Duration::from_secs(20), || {
        let got = lines.lock().unwrap();
        let hosts: std::collections::BTreeSet<&str> = got.iter().filter_map(|l| l.split('\t').next()).collect();
        (hosts.len() == 2).then(|| got.clone())
    });
    assert!(both.is_some(), "a line from each host: {:?} {:?}", lines.lock().unwrap(), errs.lock().unwrap());
    assert!(both.unwrap().iter().all(|l| l.contains("\tclaude ")), "each line a host's block");
    // remote2's daemon is killed: its wait ends, said on stderr; remote1's goes on.
    drop(db);
    let said = poll(Duration::from_secs(20), || {
        errs.lock().unwrap().iter().any(|l| l.starts_with("9agents: remote2:")).then_some(())
    });
    assert!(said.is_some(), "remote2's end said: {:?}", errs.lock().unwrap());
    assert!(child.try_wait().unwrap().is_none(), "the wait on remote1 goes on");
    let _ = child.kill();
    let _ = child.wait();
}

/// The lines `r` gives, gathered by a thread as they come.
fn lines_of(r: impl std::io::Read + Send + 'static) -> Arc<std::sync::Mutex<Vec<String>>> {
    let got = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = got.clone();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(r)).map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    got
}

#[test]
fn the_readmes_forwards_reach_the_remote_daemon_by_name_and_by_port() {
    if tools().is_none() {
        return;
    }
    // The "remote": a daemon posted in its scratch runtime, and one on a
    // loopback port; the "local" side forwards both over ssh, as README says.
    let s = Scratch::new();
    let _posted = Daemon::posted(&s, &["--demo"]);
    let port = free_tcp_port();
    let _tcp = Daemon::spawn(&s, &["--demo", "--no-post", "--tcp", &format!("127.0.0.1:{port}")]);
    let sshd = Sshd::start(&s);
    let local = s.root.join("local-run");
    std::fs::create_dir_all(local.join("9p")).unwrap();
    let forward = |spec: String| {
        Command::new(sshd.bin.join("ssh"))
            .args(["-N", "-o", "StreamLocalBindUnlink=yes", "-o", "ExitOnForwardFailure=yes", "-L", &spec, "remote1"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap()
    };
    let remote_sock = s.post_path("agents");
    let mut by_name = forward(format!("{}:{}", local.join("9p/host").display(), remote_sock.display()));
    let lport = free_tcp_port();
    let mut by_port = forward(format!("{lport}:127.0.0.1:{port}"));
    let ls = |addr: &str| {
        let mut cmd = s.command();
        cmd.env("XDG_RUNTIME_DIR", &local).args(["ls", "-a", addr, "/active/claude"]);
        cmd.output().unwrap()
    };
    let named = poll(Duration::from_secs(20), || Some(ls("host")).filter(|o| o.status.success()));
    let ported =
        poll(Duration::from_secs(20), || Some(ls(&format!("tcp!127.0.0.1!{lport}"))).filter(|o| o.status.success()));
    let _ = by_name.kill();
    let _ = by_port.kill();
    let _ = (by_name.wait(), by_port.wait());
    for (how, out) in [("a forwarded socket, by name", named), ("a forwarded port", ported)] {
        let out = out.unwrap_or_else(|| panic!("{how}: never answered"));
        assert_eq!(text(&out).lines().collect::<Vec<_>>(), ["48213", "48377"], "{how}: {out:?}");
    }
}
