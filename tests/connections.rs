//! Many clients at once, and the bad ones among them: CONFORMANCE items
//! 35–38, `--max-conns`, `--tcp` (loopback, and `--tcp-any` for anything
//! else), and `--fd`.

mod common;

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use common::*;

/// What "served promptly" means while another client misbehaves.
const PROMPT: Duration = Duration::from_secs(2);

/// Walk, open and read `/README` and `/pid` over `c`, checking the bytes.
fn walk_open_read(c: &mut Conn, pid: u32) {
    assert_eq!(c.cat("/README", 1), readme());
    assert_eq!(c.cat("/pid", 2), format!("{pid}\n").into_bytes());
}

#[test]
fn two_hundred_concurrent_connections_are_each_served() {
    const CONNS: usize = 200;
    let d = Daemon::start(&[]);
    let all_versioned = Barrier::new(CONNS);
    let (pid, d) = (d.pid, &d);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..CONNS)
            .map(|_| {
                let barrier = &all_versioned;
                s.spawn(move || {
                    let mut c = d.session(Dialect::P2000);
                    // Every connection is open and versioned before any reads.
                    barrier.wait();
                    walk_open_read(&mut c, pid);
                })
            })
            .collect();
        for w in workers {
            w.join().expect("a connection was not served");
        }
    });
}

#[test]
fn two_hundred_connections_open_at_once_each_get_their_own_replies() {
    const CONNS: usize = 200;
    let d = Daemon::start(&[]);
    let mut conns: Vec<Conn> = (0..CONNS).map(|_| d.session(Dialect::P2000)).collect();
    // Each asks for a different slice of README, all before any answer is read.
    for (i, c) in conns.iter_mut().enumerate() {
        c.walk_ok(ROOT, 1, &["README"]);
        c.open_ok(1, OREAD);
        c.send(7, &Tmsg::Read { fid: 1, offset: i as u64, count: 32 });
    }
    for (i, c) in conns.iter_mut().enumerate() {
        assert_eq!(c.recv().data(), &readme()[i..i + 32], "connection {i}");
    }
}

#[test]
fn a_client_that_never_reads_stops_being_read_and_nobody_else_notices() {
    const TREADS: usize = 20_000;
    let d = Daemon::start(&[]);
    let mut hog = d.session(Dialect::P2000);
    hog.open_path("/README", 1);
    let mut flood = Vec::with_capacity(TREADS * 23);
    for i in 0..TREADS {
        flood
            .extend(hog.encode((i % 0xFFF0) as u16, &Tmsg::Read { fid: 1, offset: 0, count: SESSION_MSIZE - IOHDRSZ }));
    }
    let rss_before = d.rss_kib();
    // Every Tread asks for ~8 KiB: 20,000 of them would be 160 MiB of
    // replies. A server that keeps reading this client must buffer them.
    hog.set_write_timeout(Some(PROMPT));
    let sent = hog.try_send_raw(&flood);
    assert!(sent.is_err(), "the daemon read all {TREADS} Treads of a client that reads nothing");

    let start = Instant::now();
    let mut other = d.session(Dialect::P2000);
    walk_open_read(&mut other, d.pid);
    assert!(start.elapsed() < PROMPT, "another client waited {:?}", start.elapsed());

    let grown = d.rss_kib().saturating_sub(rss_before);
    assert!(grown < 32 * 1024, "RSS grew {grown} KiB for one client that does not read");
}

#[test]
fn a_client_that_stops_reading_is_answered_in_full_once_it_reads_again() {
    const TREADS: usize = 2_000;
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/README", 1);
    let mut flood = Vec::new();
    for i in 0..TREADS {
        flood.extend(c.encode(i as u16 + 1, &Tmsg::Read { fid: 1, offset: 0, count: 1000 }));
    }
    // Send from another thread: the writer blocks while the server holds off.
    let mut writer = c.unix_stream().try_clone().unwrap();
    let feeder = std::thread::spawn(move || std::io::Write::write_all(&mut writer, &flood).is_ok());
    for i in 0..TREADS {
        let r = c.recv();
        assert_eq!((r.tag(), r.data().len()), (i as u16 + 1, 1000));
    }
    assert!(feeder.join().unwrap());
}

#[test]
fn past_max_conns_a_connection_is_closed() {
    let d = Daemon::start(&["--max-conns", "2"]);
    let _a = d.session(Dialect::P2000);
    let _b = d.session(Dialect::P2000);
    let mut extra = d.connect();
    // The write may already meet the hang-up; what matters is no reply.
    let _ = extra.try_send_raw(&extra.encode(NOTAG, &Tmsg::Version { msize: 8192, version: b"9P2000" }));
    extra.expect_closed();
}

#[test]
fn past_max_conns_the_connections_inside_it_are_still_served() {
    let d = Daemon::start(&["--max-conns", "2"]);
    let mut a = d.session(Dialect::P2000);
    let mut b = d.session(Dialect::P2000);
    let mut extra = d.connect();
    let _ = extra.try_send_raw(&extra.encode(NOTAG, &Tmsg::Version { msize: 8192, version: b"9P2000" }));
    extra.expect_closed();
    walk_open_read(&mut a, d.pid);
    walk_open_read(&mut b, d.pid);
}

#[test]
fn under_max_conns_again_a_new_connection_is_served() {
    let d = Daemon::start(&["--max-conns", "1"]);
    let a = d.session(Dialect::P2000);
    drop(a);
    // The daemon notices the hang-up asynchronously: poll until a new
    // connection is served rather than closed.
    let served = poll(REPLY_DEADLINE, || {
        let mut c = d.connect();
        let _ = c.try_send_raw(&c.encode(NOTAG, &Tmsg::Version { msize: 8192, version: b"9P2000" }));
        c.next().ok()
    });
    assert!(served.is_some(), "no connection served after the only one closed");
}

#[test]
fn thousands_of_connect_disconnect_cycles_leave_the_fd_count_where_it_was() {
    const CYCLES: usize = 2_000;
    let d = Daemon::start(&[]);
    let mut warm = d.session(Dialect::P2000);
    walk_open_read(&mut warm, d.pid);
    drop(warm);
    let settle = |limit: usize| poll(REPLY_DEADLINE, || (d.fd_count() <= limit).then_some(()));
    let baseline = d.fd_count();
    for i in 0..CYCLES {
        let mut c = d.connect();
        if i % 2 == 0 {
            c.handshake(Dialect::P2000);
            c.walk_ok(ROOT, 1, &["README"]);
            c.open_ok(1, OREAD);
            // Hang up with a request in flight, its reply unread.
            c.send(3, &Tmsg::Read { fid: 1, offset: 0, count: 4096 });
        }
    }
    let left = settle(baseline);
    assert!(left.is_some(), "fds {} after {CYCLES} cycles, {baseline} before", d.fd_count());
}

#[test]
fn thousands_of_connect_disconnect_cycles_leave_memory_bounded() {
    const CYCLES: usize = 2_000;
    let d = Daemon::start(&[]);
    let mut warm = d.session(Dialect::P2000);
    walk_open_read(&mut warm, d.pid);
    drop(warm);
    let before = d.rss_kib();
    for _ in 0..CYCLES {
        let mut c = d.session(Dialect::P2000);
        c.open_path("/README", 1);
        c.send(3, &Tmsg::Read { fid: 1, offset: 0, count: 8000 });
    }
    // A leak of one 8 KiB buffer per connection would be 16 MiB here.
    let mut last = d.session(Dialect::P2000);
    walk_open_read(&mut last, d.pid);
    let grown = d.rss_kib().saturating_sub(before);
    assert!(grown < 8 * 1024, "RSS grew {grown} KiB over {CYCLES} cycles");
}

#[test]
fn replies_never_carry_another_clients_bytes() {
    let d = Daemon::start(&[]);
    let mut a = d.session(Dialect::P2000);
    let mut b = d.session(Dialect::P2000);
    a.open_path("/README", 1);
    b.open_path("/pid", 1);
    for _ in 0..50 {
        assert_eq!(a.read_ok(1, 0, 8000), &readme()[..8000]);
        assert_eq!(b.read_ok(1, 0, 8000), format!("{}\n", d.pid).into_bytes());
    }
}

#[test]
fn tcp_on_loopback_serves_the_tree() {
    let d = Daemon::start_tcp(&[]);
    let mut c = d.session(Dialect::P2000);
    walk_open_read(&mut c, d.pid);
}

#[test]
fn tcp_serves_nine_p_2000_u_too() {
    let d = Daemon::start_tcp(&[]);
    let mut c = d.session(Dialect::P2000u);
    let (_, errno) = c.walk(ROOT, 1, &["nosuch"]).expect_error();
    assert_eq!(errno, libc::ENOENT as u32);
}

#[test]
fn unix_and_tcp_listeners_serve_side_by_side() {
    let scratch = Scratch::new();
    let sock = scratch.root.join("both");
    let port = free_tcp_port();
    let tcp = format!("127.0.0.1:{port}");
    let d = Daemon::spawn(&scratch, &["--no-post", "--unix", arg(&sock), "--tcp", &tcp]);
    let up = poll(START_DEADLINE, || std::net::TcpStream::connect(&tcp).ok());
    assert!(up.is_some(), "no TCP listener; stderr:\n{}", d.stderr());
    let mut over_tcp = Conn::tcp(tcp.parse().unwrap());
    over_tcp.handshake(Dialect::P2000);
    let mut over_unix = Conn::unix(&sock);
    over_unix.handshake(Dialect::P2000);
    assert_eq!(over_tcp.cat("/pid", 1), over_unix.cat("/pid", 1));
}

#[test]
fn fd_serves_one_session_over_a_socketpair() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let d = Daemon::start_on_fd(OwnedFd::from(theirs), &[]);
    let mut c = Conn::from_unix(ours);
    c.handshake(Dialect::P2000);
    walk_open_read(&mut c, d.pid);
}

#[test]
fn fd_exits_zero_when_its_session_closes() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let mut d = Daemon::start_on_fd(OwnedFd::from(theirs), &[]);
    let mut c = Conn::from_unix(ours);
    c.handshake(Dialect::P2000u);
    drop(c);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert!(status.success(), "{status}; stderr:\n{}", d.stderr());
}

#[test]
fn fd_posts_nothing() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let d = Daemon::start_on_fd(OwnedFd::from(theirs), &[]);
    let mut c = Conn::from_unix(ours);
    c.handshake(Dialect::P2000);
    assert!(!d.scratch.post_path("agents").exists());
    assert!(!d.scratch.runtime.join("9p").exists());
}

#[test]
fn fd_of_a_closed_descriptor_is_an_error() {
    let scratch = Scratch::new();
    let mut d = Daemon::spawn(&scratch, &["--fd", "57"]);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert!(!status.success(), "--fd 57 (not open) exited {status}");
}

/// An address of this machine's that is not loopback, if it has one: the
/// source address of a route out (a UDP connect sends nothing).
fn non_loopback_address() -> Option<std::net::IpAddr> {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    probe.connect("192.0.2.1:9").ok()?;
    Some(probe.local_addr().ok()?.ip()).filter(|ip| !ip.is_loopback() && !ip.is_unspecified())
}

#[test]
fn tcp_on_a_non_loopback_address_is_refused_without_tcp_any() {
    let port = free_tcp_port();
    let mut binds = vec![format!("0.0.0.0:{port}"), format!("[::]:{port}")];
    binds.extend(non_loopback_address().map(|ip| std::net::SocketAddr::new(ip, port).to_string()));
    for bind in binds {
        let scratch = Scratch::new();
        let mut d = Daemon::spawn(&scratch, &["--no-post", "--tcp", &bind]);
        let status = d.wait_exit(EXIT_DEADLINE);
        let stderr = d.stderr();
        assert_eq!(status.code(), Some(2), "--tcp {bind}: {status}; stderr:\n{stderr}");
        assert!(stderr.contains("not a loopback address") && stderr.contains("--tcp-any"), "{stderr}");
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "--tcp {bind} listened anyway");
    }
}

#[test]
fn tcp_any_serves_a_non_loopback_address_and_warns() {
    let port = free_tcp_port();
    let bind = format!("0.0.0.0:{port}");
    let scratch = Scratch::new();
    let mut d = Daemon::spawn(&scratch, &["--no-post", "--tcp-any", "--tcp", &bind]);
    let dial: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let up = poll(START_DEADLINE, || std::net::TcpStream::connect(dial).ok());
    assert!(up.is_some(), "nothing listens on {bind}; stderr:\n{}", d.stderr());
    d.tcp = Some(dial);
    let mut c = d.session(Dialect::P2000);
    walk_open_read(&mut c, d.pid);
    d.wait_stderr("nothing on the wire is authenticated", REPLY_DEADLINE);
}

#[test]
fn a_daemon_on_loopback_tcp_is_reached_from_another_world_by_dial_string_and_by_raw_9p() {
    // README, "A remote machine": the daemon posts itself as usual and also
    // listens on 127.0.0.1:PORT, which ssh -L forwards; the client runs in
    // a world of its own (another HOME and runtime dir, no posted name) and
    // dials tcp!127.0.0.1!PORT.
    let port = free_tcp_port();
    let remote = Scratch::new();
    let tcp = format!("127.0.0.1:{port}");
    let mut d = Daemon::posted(&remote, &["--demo", "--tcp", &tcp]);
    d.tcp = Some(tcp.parse().unwrap());
    let here = Scratch::new();
    let addr = format!("tcp!127.0.0.1!{port}");
    let ls = run_client(&here, &["ls", "-a", &addr, "/"], b"");
    assert!(ls.status.success(), "9agents ls -a {addr} /: {}", String::from_utf8_lossy(&ls.stderr));
    let listed = String::from_utf8(ls.stdout).unwrap();
    for name in ["README", "active", "claude", "codex"] {
        assert!(listed.lines().any(|l| l == name), "{name} missing from:\n{listed}");
    }
    let transcript = "/claude/projects/-home-demo-src-9agents/4462ebfc-5f91-4ef0-9cfb-ac6e7687a66e.jsonl";
    let on_disk = std::fs::read(disk_path(&demo_home(), transcript).unwrap()).unwrap();
    let cat = run_client(&here, &["cat", "-a", &addr, transcript], b"");
    assert!(cat.status.success(), "{}", String::from_utf8_lossy(&cat.stderr));
    assert_eq!(cat.stdout, on_disk);
    let mut raw = Conn::tcp(d.tcp.unwrap());
    raw.handshake(Dialect::P2000u);
    assert_eq!(raw.cat(transcript, 1), on_disk);
    assert!(!here.runtime.join("9p").exists(), "the client's world has no posted name to have used");
}
