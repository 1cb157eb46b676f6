//! Socket activation and the systemd units (contrib/systemd): a daemon
//! handed a listening socket the way systemd hands one — at fd 3, with
//! `LISTEN_FDS=1` and `LISTEN_PID` its own pid — accepts on it again and
//! again, posts nothing, stops on SIGTERM leaving the socket's path to its
//! owner, and passes none of it on to what it starts. The test plays
//! systemd: it binds the socket and keeps it, across daemons.
//!
//! Two checks use systemd's own tools and skip with a message when they
//! are missing (failing instead when `CI` is set: `.ci/run` installs
//! systemd): `systemd-analyze verify` of the shipped units, and
//! `systemd-socket-activate`, systemd's implementation of the protocol.

mod common;
mod move_fakes;

use std::fs;
use std::os::fd::OwnedFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::*;
use move_fakes::*;

/// The units, as shipped.
const UNITS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/systemd");
/// `O_CLOEXEC` as /proc/<pid>/fdinfo prints it (octal `flags:`).
const FDINFO_CLOEXEC: u32 = 0o2000000;

/// A listening socket in `scratch`, as a socket unit's would be: the fd
/// (the test holds it, as systemd does) and its path.
fn listening_socket(scratch: &Scratch) -> (OwnedFd, PathBuf) {
    let path = scratch.root.join("activated");
    let listener = UnixListener::bind(&path).unwrap_or_else(|e| panic!("bind {}: {e}", path.display()));
    (OwnedFd::from(listener), path)
}

/// A daemon started on `fd` with `LISTEN_PID` its own, dialled at `path`.
fn activated(scratch: &Arc<Scratch>, fd: &OwnedFd, path: &Path, args: &[&str]) -> Daemon {
    let mut d = Daemon::start_passed(scratch, fd, ListenPid::Daemon, args, &[]);
    d.socket = Some(path.to_owned());
    d
}

fn pid_over(c: &mut Conn) -> String {
    String::from_utf8(c.cat("/pid", 1)).unwrap()
}

#[test]
fn a_passed_listening_socket_is_accepted_on_again_and_again() {
    let s = Scratch::new();
    let (fd, path) = listening_socket(&s);
    let d = activated(&s, &fd, &path, &[]);
    let pid = format!("{}\n", d.pid);
    for _ in 0..3 {
        let mut c = d.session(Dialect::P2000);
        assert_eq!(pid_over(&mut c), pid);
    }
    let mut open: Vec<Conn> = (0..4).map(|_| d.session(Dialect::P2000u)).collect();
    for c in &mut open {
        assert_eq!(pid_over(c), pid);
    }
}

#[test]
fn the_builtin_client_reaches_an_activated_daemon() {
    let s = Scratch::new();
    let (fd, path) = listening_socket(&s);
    let d = activated(&s, &fd, &path, &[]);
    let addr = format!("unix!{}", arg(&path));
    let out = d.client(&["ls", "-a", &addr, "/"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).lines().any(|l| l == "README"));
}

#[test]
fn with_a_passed_socket_nothing_is_posted() {
    let s = Scratch::new();
    let (fd, path) = listening_socket(&s);
    let d = activated(&s, &fd, &path, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(pid_over(&mut c), format!("{}\n", d.pid));
    assert!(!s.runtime.join("9p").exists(), "an activated daemon made {}", s.runtime.join("9p").display());
}

#[test]
fn sigterm_stops_an_activated_daemon_cleanly_and_leaves_the_socket_path() {
    let s = Scratch::new();
    let (fd, path) = listening_socket(&s);
    let mut d = activated(&s, &fd, &path, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(pid_over(&mut c), format!("{}\n", d.pid));
    d.signal(libc::SIGTERM);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert!(status.success(), "{status}; stderr:\n{}", d.stderr());
    assert!(is_socket(&path), "the daemon unlinked {}, which systemd owns", path.display());
    // systemd's socket still listens: a client connecting now waits in its
    // backlog for the next daemon.
    assert!(UnixStream::connect(&path).is_ok());
}

#[test]
fn a_client_that_connects_between_two_daemons_is_served_by_the_second() {
    let s = Scratch::new();
    let (fd, path) = listening_socket(&s);
    let mut first = activated(&s, &fd, &path, &[]);
    first.session(Dialect::P2000);
    first.signal(libc::SIGTERM);
    assert!(first.wait_exit(EXIT_DEADLINE).success(), "{}", first.stderr());
    // What systemd does: the socket outlives the service, and the next
    // connection starts it again.
    let mut waiting = Conn::unix(&path);
    waiting.send(NOTAG, &Tmsg::Version { msize: SESSION_MSIZE, version: b"9P2000" });
    let second = activated(&s, &fd, &path, &[]);
    assert!(matches!(waiting.recv().msg(), Rmsg::Version { .. }), "{}", second.stderr());
    let mut c = second.session(Dialect::P2000);
    assert_eq!(pid_over(&mut c), format!("{}\n", second.pid));
}

#[test]
fn a_passed_socket_is_close_on_exec_in_the_daemon() {
    let s = Scratch::new();
    let (fd, path) = listening_socket(&s);
    let d = activated(&s, &fd, &path, &[]);
    d.session(Dialect::P2000);
    let fdinfo = fs::read_to_string(format!("/proc/{}/fdinfo/3", d.pid)).expect("the daemon holds fd 3");
    let flags = fdinfo.lines().find_map(|l| l.strip_prefix("flags:")).expect("fdinfo has flags");
    let flags = u32::from_str_radix(flags.trim(), 8).unwrap();
    assert_ne!(flags & FDINFO_CLOEXEC, 0, "fd 3 is inheritable: flags {flags:o}");
}

#[test]
fn a_connected_socket_passed_without_fd_is_refused_with_a_message() {
    let s = Scratch::new();
    let (_ours, theirs) = UnixStream::pair().unwrap();
    let mut d = Daemon::start_passed(&s, &OwnedFd::from(theirs), ListenPid::Daemon, &[], &[]);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert!(!status.success(), "a daemon passed a connected socket exited {status}");
    let stderr = d.stderr();
    assert!(stderr.contains("passed fd 3") && stderr.contains("not listening"), "{stderr}");
    assert!(stderr.contains("--fd 3"), "the message should say how to serve it: {stderr}");
}

#[test]
fn with_fd_3_a_passed_connected_socket_is_served_as_one_session() {
    // systemd's Accept=yes: one connected socket per instance, LISTEN_FDS=1,
    // and `ExecStart=9agents --fd 3`.
    let s = Scratch::new();
    let (ours, theirs) = UnixStream::pair().unwrap();
    let mut d = Daemon::start_passed(&s, &OwnedFd::from(theirs), ListenPid::Daemon, &["--fd", "3"], &[]);
    let mut c = Conn::from_unix(ours);
    c.handshake(Dialect::P2000);
    assert_eq!(pid_over(&mut c), format!("{}\n", d.pid));
    drop(c);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert!(status.success(), "{status}; stderr:\n{}", d.stderr());
}

#[test]
fn sockets_passed_to_another_pid_are_not_ours_and_the_daemon_posts_as_usual() {
    let s = Scratch::new();
    let (fd, _path) = listening_socket(&s);
    let d = Daemon::start_passed(&s, &fd, ListenPid::Other(1), &[], &[]);
    let posted = s.post_path("agents");
    let up = poll(START_DEADLINE, || UnixStream::connect(&posted).ok());
    assert!(up.is_some(), "nothing posted at {}; stderr:\n{}", posted.display(), d.stderr());
    let mut c = Conn::unix(&posted);
    c.handshake(Dialect::P2000);
    assert_eq!(pid_over(&mut c), format!("{}\n", d.pid));
}

#[test]
fn a_passed_tcp_socket_on_loopback_is_served() {
    // A socket unit with `ListenStream=127.0.0.1:PORT` (README, "A remote
    // machine") passes a TCP listener.
    let s = Scratch::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let fd = OwnedFd::from(listener);
    let mut d = Daemon::start_passed(&s, &fd, ListenPid::Daemon, &[], &[]);
    d.tcp = Some(addr);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(pid_over(&mut c), format!("{}\n", d.pid));
}

#[test]
fn a_passed_tcp_socket_on_every_address_is_refused_without_tcp_any_and_served_with_it() {
    let s = Scratch::new();
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let dial: std::net::SocketAddr = format!("127.0.0.1:{}", listener.local_addr().unwrap().port()).parse().unwrap();
    let fd = OwnedFd::from(listener);
    let mut refused = Daemon::start_passed(&s, &fd, ListenPid::Daemon, &[], &[]);
    let status = refused.wait_exit(EXIT_DEADLINE);
    assert!(!status.success(), "a passed 0.0.0.0 socket was served without --tcp-any");
    assert!(refused.stderr().contains("--tcp-any"), "{}", refused.stderr());
    let mut d = Daemon::start_passed(&s, &fd, ListenPid::Daemon, &["--tcp-any"], &[]);
    d.tcp = Some(dial);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(pid_over(&mut c), format!("{}\n", d.pid));
    d.wait_stderr("nothing on the wire is authenticated", REPLY_DEADLINE);
}

#[test]
fn help_says_a_passed_socket_replaces_the_post() {
    let s = Scratch::new();
    let out = s.command().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("LISTEN_FDS") && help.contains("does not post"), "{help}");
    assert!(help.contains("--tcp-any"), "{help}");
}

#[test]
fn zmx_started_by_an_activated_daemon_inherits_no_listen_variables() {
    let w = World::new(Zmx::Post);
    let agent = w.claude();
    let (fd, path) = listening_socket(&w.scratch);
    let args = ["--proc", "/proc", "--allow-move", "--zmx", arg(&w.zmx)];
    let env = [("ZMX_SESSION", DAEMON_ZMX), ("LISTEN_FDNAMES", "agents")];
    let mut d = Daemon::start_passed(&w.scratch, &fd, ListenPid::Daemon, &args, &env);
    d.socket = Some(path);
    let mut c = d.session(Dialect::P2000);
    let r = move_agent(&mut c, "claude", &agent, b"moved\n");
    assert_written(&r, 6);
    let rec = w.wait_zmx_record();
    for var in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
        assert_eq!(rec.env(var), None, "zmx inherited {var}: {rec:?}");
    }
    assert_eq!(rec.env("XDG_RUNTIME_DIR"), Some(arg(&w.scratch.runtime)), "zmx's environment was recorded");
}

// ---------------------------------------------------------------------------
// With systemd's own tools.

/// Is `tool` on PATH? If not: fail on CI (`.ci/run` installs systemd), else
/// say on stderr that the test skipped, and why.
fn systemd_tool(tool: &str) -> bool {
    let found = Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var_os("CI").is_none(), "CI is set but {tool} is missing; .ci/run installs systemd");
        let line = format!("activation: skipped: {tool} is not installed (apt-get install systemd)\n");
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    }
    found
}

/// `systemd-analyze --user verify` of `units` in `scratch`'s world, whose
/// HOME is `home`: its exit status and everything it printed.
fn verify(scratch: &Scratch, home: &Path, units: &[PathBuf]) -> (bool, String) {
    let out = Command::new("systemd-analyze")
        .args(["--user", "verify"])
        .args(units)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_RUNTIME_DIR", &scratch.runtime)
        .current_dir(home)
        .output()
        .expect("run systemd-analyze");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), said)
}

fn shipped_units() -> Vec<PathBuf> {
    ["9agents.socket", "9agents.service"].iter().map(|u| Path::new(UNITS).join(u)).collect()
}

#[test]
fn the_shipped_units_pass_systemd_analyze_verify_without_a_word() {
    if !systemd_tool("systemd-analyze") {
        return;
    }
    let s = Scratch::new();
    // The service runs %h/.cargo/bin/9agents, where `cargo install` puts it;
    // verify checks it is there, so this world's home has the built binary.
    let bin = s.home.join(".cargo/bin");
    fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("9agents")).unwrap();
    let (ok, said) = verify(&s, &s.home, &shipped_units());
    assert!(ok && said.trim().is_empty(), "systemd-analyze verify (ok {ok}) said:\n{said}");
}

#[test]
fn the_forward_template_passes_systemd_analyze_verify_as_an_instance() {
    if !systemd_tool("systemd-analyze") || !Path::new("/usr/bin/ssh").exists() {
        return;
    }
    let s = Scratch::new();
    let unit = s.root.join("9agents-forward@example.org.service");
    fs::copy(Path::new(UNITS).join("9agents-forward@.service"), &unit).unwrap();
    let (ok, said) = verify(&s, &s.home, &[unit]);
    assert!(ok && said.trim().is_empty(), "systemd-analyze verify (ok {ok}) said:\n{said}");
}

#[test]
fn systemd_analyze_verify_notices_a_service_with_no_binary_to_run() {
    // The check above can fail: without the binary at %h/.cargo/bin, verify
    // refuses the service.
    if !systemd_tool("systemd-analyze") {
        return;
    }
    let s = Scratch::new();
    let (ok, said) = verify(&s, &s.home, &shipped_units());
    assert!(!ok, "verify passed a service whose ExecStart does not exist:\n{said}");
    assert!(said.contains(".cargo/bin/9agents"), "{said}");
}

/// The socket unit's `ListenStream=` with `%t` as `runtime`.
fn unit_socket_path(runtime: &Path) -> PathBuf {
    let unit = fs::read_to_string(Path::new(UNITS).join("9agents.socket")).unwrap();
    let listen = unit.lines().find_map(|l| l.strip_prefix("ListenStream=")).expect("a ListenStream= line");
    let rel = listen.strip_prefix("%t/").expect("ListenStream= is under %t, the runtime dir");
    runtime.join(rel)
}

#[test]
fn systemd_socket_activate_starts_a_daemon_the_default_client_reaches_at_the_units_path() {
    if !systemd_tool("systemd-socket-activate") {
        return;
    }
    let s = Scratch::new();
    let path = unit_socket_path(&s.runtime);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    // systemd-socket-activate passes on only the variables it is given.
    let mut cmd = s.command_of(Path::new("systemd-socket-activate"));
    cmd.arg("--listen").arg(&path);
    for var in ["HOME", "XDG_RUNTIME_DIR"] {
        let value = if var == "HOME" { &s.home } else { &s.runtime };
        cmd.arg(format!("--setenv={var}={}", arg(value)));
    }
    cmd.arg(BIN);
    let mut d = Daemon::spawn_command(&s, cmd);
    poll(START_DEADLINE, || is_socket(&path).then_some(()))
        .unwrap_or_else(|| panic!("no socket at {}; stderr:\n{}", path.display(), d.stderr()));
    // It execs 9agents (same pid) on the first connection; the client dials
    // the posted name `agents` by default, which is the unit's path.
    for _ in 0..3 {
        let out = d.client(&["cat", "/pid"]);
        assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stderr), d.stderr());
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{}\n", d.pid));
    }
    d.signal(libc::SIGTERM);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert!(status.success(), "{status}; stderr:\n{}", d.stderr());
    assert!(is_socket(&path), "the daemon unlinked the socket systemd-socket-activate bound");
}
