//! The process: posting, the stale-socket protocol, signals, flags.

mod common;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;

#[test]
fn the_daemon_posts_itself_as_agents_in_the_runtime_dir() {
    let scratch = Scratch::new();
    let d = Daemon::posted(&scratch, &[]);
    let mut c = Conn::unix(&scratch.post_path("agents"));
    c.handshake(Dialect::P2000);
    assert_eq!(c.cat("/pid", 1), format!("{}\n", d.pid).into_bytes());
}

#[test]
fn the_post_directory_is_created_private() {
    let scratch = Scratch::new();
    let _d = Daemon::posted(&scratch, &[]);
    let mode = std::fs::metadata(scratch.runtime.join("9p")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

#[test]
fn name_changes_the_posted_name() {
    let scratch = Scratch::new();
    let _d = Daemon::posted(&scratch, &["--name", "other"]);
    assert!(is_socket(&scratch.post_path("other")));
    assert!(!scratch.post_path("agents").exists());
}

#[test]
fn no_post_posts_nothing() {
    let d = Daemon::start(&[]);
    assert!(!d.scratch.runtime.join("9p").exists());
}

#[test]
fn a_killed_daemons_name_is_reclaimed_by_a_new_one() {
    let scratch = Scratch::new();
    let mut old = Daemon::posted(&scratch, &[]);
    old.kill_hard();
    let path = scratch.post_path("agents");
    assert!(is_socket(&path), "the killed daemon's socket should be left behind");
    let new = Daemon::posted(&scratch, &[]);
    let mut c = Conn::unix(&path);
    c.handshake(Dialect::P2000);
    assert_eq!(c.cat("/pid", 1), format!("{}\n", new.pid).into_bytes());
}

/// Whether a 9P server at `path` answers a Tversion with an Rversion now. A
/// bare connect is no proof: a daemon killed a moment ago leaves a socket
/// that still accepts for some milliseconds, and a mute one accepts for
/// ever. One look waits `LOOK`; the caller polls looks to its deadline.
fn answers_tversion(path: &Path) -> bool {
    const LOOK: Duration = Duration::from_millis(200);
    let Ok(mut s) = UnixStream::connect(path) else { return false };
    s.set_read_timeout(Some(LOOK)).unwrap();
    let mut out = Vec::new();
    proto::encode_t(&mut out, NOTAG, &Tmsg::Version { msize: 8192, version: b"9P2000" }, Dialect::P2000);
    let mut head = [0u8; 7];
    s.write_all(&out).is_ok() && s.read_exact(&mut head).is_ok() && head[4] == msg::RVERSION
}

/// Poll until the daemon `d` answers 9P at `path`, failing with its stderr
/// if it exits first (as one that took the name for taken does).
fn wait_serving(d: &mut Daemon, path: &Path) {
    let up = poll(START_DEADLINE, || {
        if let Some(status) = d.try_status() {
            panic!("the new daemon exited ({status}) instead of reclaiming the name; stderr:\n{}", d.stderr());
        }
        answers_tversion(path).then_some(())
    });
    assert!(up.is_some(), "the new daemon never answered at {}; stderr:\n{}", path.display(), d.stderr());
}

#[test]
fn a_daemon_started_right_after_kill_9_reclaims_the_name_every_time() {
    // The killed daemon's socket can still accept for a few milliseconds
    // after it is reaped: the window is small, so try it many times.
    let scratch = Scratch::new();
    let path = scratch.post_path("agents");
    let mut old = Daemon::posted(&scratch, &[]);
    for round in 0..20 {
        old.kill_hard();
        let mut new = Daemon::spawn(&scratch, &[]);
        wait_serving(&mut new, &path);
        let mut c = Conn::unix(&path);
        c.handshake(Dialect::P2000);
        assert_eq!(c.cat("/pid", 1), format!("{}\n", new.pid).into_bytes(), "round {round}");
        old = new;
    }
}

#[test]
fn a_socket_that_accepts_and_never_answers_is_reclaimed_after_the_deadline() {
    let scratch = Scratch::new();
    let dir = scratch.runtime.join("9p");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let path = scratch.post_path("agents");
    let mute = UnixListener::bind(&path).unwrap();
    mute.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let holder = {
        let stop = stop.clone();
        // Accepts every connection and holds it, saying nothing.
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                match mute.accept() {
                    Ok((s, _)) => held.push(s),
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
            held.len()
        })
    };
    let mut d = Daemon::spawn(&scratch, &[]);
    wait_serving(&mut d, &path);
    stop.store(true, Ordering::Relaxed);
    assert!(holder.join().unwrap() >= 1, "the new daemon never connected to the mute socket");
    let mut c = Conn::unix(&path);
    c.handshake(Dialect::P2000);
    assert_eq!(c.cat("/pid", 1), format!("{}\n", d.pid).into_bytes());
}

#[test]
fn a_live_daemons_name_is_refused_as_taken() {
    let scratch = Scratch::new();
    let first = Daemon::posted(&scratch, &[]);
    let mut second = Daemon::spawn(&scratch, &[]);
    assert!(!second.wait_exit(EXIT_DEADLINE).success());
    assert!(second.stderr().contains("name taken"), "stderr:\n{}", second.stderr());
    let mut c = Conn::unix(&scratch.post_path("agents"));
    c.handshake(Dialect::P2000);
    assert_eq!(c.cat("/pid", 1), format!("{}\n", first.pid).into_bytes());
}

#[test]
fn a_live_daemon_at_its_connection_cap_still_holds_its_name() {
    // Past --max-conns a connection is accepted and closed at once: that
    // hang-up is a live server's, not a dead one's, and must not lose it
    // its name.
    let scratch = Scratch::new();
    let first = Daemon::posted(&scratch, &["--max-conns", "1"]);
    let path = scratch.post_path("agents");
    let mut held = Conn::unix(&path);
    held.handshake(Dialect::P2000);
    let mut second = Daemon::spawn(&scratch, &[]);
    assert!(!second.wait_exit(EXIT_DEADLINE).success(), "the second daemon took a live daemon's name");
    assert!(second.stderr().contains("name taken"), "stderr:\n{}", second.stderr());
    assert_eq!(held.cat("/pid", 1), format!("{}\n", first.pid).into_bytes());
}

#[test]
fn a_socket_that_hung_up_and_then_is_slow_to_hang_up_again_is_live() {
    // A live daemon at its cap on a loaded machine: it accepted and closed
    // the probe's first connections, then had not closed the last one by
    // the probe's deadline. That is a live server's name, not a dead one's.
    let scratch = Scratch::new();
    let dir = scratch.runtime.join("9p");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let path = scratch.post_path("agents");
    let slow = UnixListener::bind(&path).unwrap();
    slow.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let holder = {
        let stop = stop.clone();
        // Closes the first three connections at once, holds the rest.
        std::thread::spawn(move || {
            let (mut closed, mut held) = (0, Vec::new());
            while !stop.load(Ordering::Relaxed) {
                match slow.accept() {
                    Ok((s, _)) if closed < 3 => {
                        drop(s);
                        closed += 1;
                    }
                    Ok((s, _)) => held.push(s),
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
            (closed, held.len())
        })
    };
    let mut d = Daemon::spawn(&scratch, &[]);
    let status = d.wait_exit(EXIT_DEADLINE);
    stop.store(true, Ordering::Relaxed);
    let (closed, held) = holder.join().unwrap();
    assert_eq!((closed, held), (3, 1), "the probe's connections: closed, then held");
    assert!(!status.success(), "the daemon took a live server's name");
    assert!(d.stderr().contains("name taken"), "stderr:\n{}", d.stderr());
}

#[test]
fn a_live_daemons_name_makes_a_second_exit_non_zero() {
    let scratch = Scratch::new();
    let _first = Daemon::posted(&scratch, &[]);
    let mut second = Daemon::spawn(&scratch, &[]);
    let status = second.wait_exit(EXIT_DEADLINE);
    assert!(!status.success(), "the second daemon exited {status}");
}

#[test]
fn a_live_daemons_name_is_refused_with_a_message_naming_the_socket() {
    let scratch = Scratch::new();
    let _first = Daemon::posted(&scratch, &[]);
    let mut second = Daemon::spawn(&scratch, &[]);
    second.wait_exit(EXIT_DEADLINE);
    let path = scratch.post_path("agents");
    assert!(second.stderr().contains(arg(&path)), "stderr does not name {}:\n{}", path.display(), second.stderr());
}

#[test]
fn a_refused_second_daemon_leaves_the_first_serving() {
    let scratch = Scratch::new();
    let first = Daemon::posted(&scratch, &[]);
    let mut second = Daemon::spawn(&scratch, &[]);
    second.wait_exit(EXIT_DEADLINE);
    let mut c = Conn::unix(&scratch.post_path("agents"));
    c.handshake(Dialect::P2000);
    assert_eq!(c.cat("/pid", 1), format!("{}\n", first.pid).into_bytes());
}

#[test]
fn a_file_that_is_not_a_socket_in_the_posted_place_is_left_alone() {
    let scratch = Scratch::new();
    let dir = scratch.runtime.join("9p");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(dir.join("agents"), b"precious").unwrap();
    let mut d = Daemon::spawn(&scratch, &[]);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert!(!status.success());
    assert_eq!(std::fs::read(dir.join("agents")).unwrap(), b"precious");
}

#[test]
fn sigterm_unposts_and_exits_zero() {
    let scratch = Scratch::new();
    let mut d = Daemon::posted(&scratch, &[]);
    d.signal(libc::SIGTERM);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert_eq!(status.code(), Some(0), "stderr:\n{}", d.stderr());
    assert!(!scratch.post_path("agents").exists());
}

#[test]
fn sigint_unposts_and_exits_zero() {
    let scratch = Scratch::new();
    let mut d = Daemon::posted(&scratch, &[]);
    d.signal(libc::SIGINT);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert_eq!(status.code(), Some(0), "stderr:\n{}", d.stderr());
    assert!(!scratch.post_path("agents").exists());
}

#[test]
fn sigterm_with_clients_connected_still_exits_zero() {
    let scratch = Scratch::new();
    let mut d = Daemon::posted(&scratch, &[]);
    let mut c = Conn::unix(&scratch.post_path("agents"));
    c.handshake(Dialect::P2000);
    c.open_path("/README", 1);
    d.signal(libc::SIGTERM);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert_eq!(status.code(), Some(0), "stderr:\n{}", d.stderr());
}

#[test]
fn sigterm_hangs_up_on_connected_clients() {
    let scratch = Scratch::new();
    let mut d = Daemon::posted(&scratch, &[]);
    let mut c = Conn::unix(&scratch.post_path("agents"));
    c.handshake(Dialect::P2000);
    d.signal(libc::SIGTERM);
    d.wait_exit(EXIT_DEADLINE);
    c.expect_closed();
}

#[test]
fn sigterm_removes_a_unix_socket_it_bound() {
    let mut d = Daemon::start(&[]);
    let sock = d.socket.clone().unwrap();
    d.signal(libc::SIGTERM);
    d.wait_exit(EXIT_DEADLINE);
    assert!(!sock.exists());
}

#[test]
fn sigterm_leaves_a_socket_that_replaced_ours_in_place() {
    let scratch = Scratch::new();
    let mut d = Daemon::posted(&scratch, &[]);
    let path = scratch.post_path("agents");
    std::fs::remove_file(&path).unwrap();
    let _impostor = UnixListener::bind(&path).unwrap();
    d.signal(libc::SIGTERM);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert!(status.success(), "{status}");
    assert!(is_socket(&path), "the daemon unlinked a socket that was not its own");
}

#[test]
fn after_sigterm_the_name_can_be_posted_again() {
    let scratch = Scratch::new();
    let mut first = Daemon::posted(&scratch, &[]);
    first.signal(libc::SIGTERM);
    first.wait_exit(EXIT_DEADLINE);
    let second = Daemon::posted(&scratch, &[]);
    let mut c = Conn::unix(&scratch.post_path("agents"));
    c.handshake(Dialect::P2000);
    assert_eq!(c.cat("/pid", 1), format!("{}\n", second.pid).into_bytes());
}

#[test]
fn sigpipe_from_a_vanished_client_does_not_kill_the_daemon() {
    let mut d = Daemon::start(&[]);
    for _ in 0..50 {
        let mut c = d.session(Dialect::P2000);
        c.open_path("/README", 1);
        let mut batch = Vec::new();
        for t in 0..64u16 {
            batch.extend(c.encode(t + 10, &Tmsg::Read { fid: 1, offset: 0, count: 8000 }));
        }
        c.send_raw(&batch);
    }
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.cat("/pid", 1), format!("{}\n", d.pid).into_bytes());
    assert!(d.is_running());
}

/// Run the daemon with `args` and expect a usage error.
fn usage_error(args: &[&str]) -> (Option<i32>, String) {
    let scratch = Scratch::new();
    let mut d = Daemon::spawn(&scratch, args);
    let status = d.wait_exit(EXIT_DEADLINE);
    (status.code(), d.stderr())
}

#[test]
fn an_unknown_flag_exits_2_with_the_usage() {
    let (code, stderr) = usage_error(&["--frobnicate"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("usage:"), "{stderr}");
}

#[test]
fn a_flag_missing_its_value_exits_2_with_the_usage() {
    let (code, stderr) = usage_error(&["--no-post", "--unix"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("usage:"), "{stderr}");
}

#[test]
fn a_non_numeric_msize_exits_2_with_the_usage() {
    let (code, stderr) = usage_error(&["--msize", "lots"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("usage:"), "{stderr}");
}

#[test]
fn no_kernel_workers_exits_2_saying_so() {
    let (code, stderr) = usage_error(&["--kernel-workers", "0"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--kernel-workers must be at least 1"), "{stderr}");
}

#[test]
fn a_daemon_with_one_kernel_worker_caps_its_ring_and_serves() {
    let d = Daemon::start(&["-v", "--kernel-workers", "1"]);
    let mut c = d.session(Dialect::P2000);
    c.cat("/README", 1);
    let said = d.wait_stderr("ring: kernel workers capped at 1", REPLY_DEADLINE);
    assert!(!said.contains("not capped"), "{said}");
}

#[test]
fn a_bad_tcp_address_exits_2_with_the_usage() {
    let (code, stderr) = usage_error(&["--no-post", "--tcp", "localhost"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("usage:"), "{stderr}");
}

#[test]
fn no_post_with_nothing_to_listen_on_exits_2() {
    let (code, stderr) = usage_error(&["--no-post"]);
    assert_eq!(code, Some(2), "{stderr}");
}

#[test]
fn a_stray_argument_exits_2_with_the_usage() {
    let (code, stderr) = usage_error(&["serve"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("usage:"), "{stderr}");
}

#[test]
fn help_prints_the_usage_and_exits_zero() {
    let scratch = Scratch::new();
    let out = scratch.command().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("usage:"));
}

#[test]
fn trace_prints_every_t_and_r_message_one_line_each() {
    let d = Daemon::start(&["-D"]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.clunk_ok(1);
    let err = d.wait_stderr("Rclunk", REPLY_DEADLINE);
    for kind in ["Tversion", "Rversion", "Tattach", "Rattach", "Twalk", "Rwalk", "Tclunk"] {
        assert_eq!(err.lines().filter(|l| l.contains(kind)).count(), 1, "{kind} in:\n{err}");
    }
}

#[test]
fn without_trace_no_message_is_printed() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    assert!(!d.stderr().contains("Twalk"), "{}", d.stderr());
}

#[test]
fn the_daemon_never_touches_the_home_it_is_given() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.cat("/README", 1);
    assert_eq!(std::fs::read_dir(&d.scratch.home).unwrap().count(), 0);
}

#[test]
fn verbose_logs_where_it_listens() {
    let d = Daemon::start(&["-v"]);
    let sock = d.socket.clone().unwrap();
    d.wait_stderr(&format!("unix!{}", arg(&sock)), REPLY_DEADLINE);
}

#[test]
fn a_quiet_daemon_serving_a_session_prints_nothing() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.cat("/README", 1);
    c.walk(ROOT, 2, &["nosuch"]).expect_error();
    assert_eq!(d.stderr(), "");
}
