//! The client against a scripted server on a socketpair: what goes out on
//! the wire for each call, and how each kind of answer comes back.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::thread::{self, JoinHandle};

use super::*;
use crate::proto::{decode_t, encode_r, encode_stat, WalkQids, DMDIR, OREAD, QTDIR};

/// What the scripted server answers the server's own way: a reply for
/// each request, `'static` so the script can hand out literals.
type Script = Box<dyn FnMut(&Tmsg<'_>) -> Rmsg<'static> + Send>;

/// Serve `script` in `dialect` on one end of a socketpair until the client
/// hangs up; the join handle yields a one-line summary of every request.
fn serve(dialect: Dialect, mut script: Script) -> (Conn, JoinHandle<Vec<String>>) {
    let (client_end, mut server_end) = UnixStream::pair().unwrap();
    let server = thread::spawn(move || {
        let mut log = Vec::new();
        let mut size = [0u8; 4];
        while server_end.read_exact(&mut size).is_ok() {
            let mut frame = size.to_vec();
            frame.resize(u32::from_le_bytes(size) as usize, 0);
            server_end.read_exact(&mut frame[4..]).unwrap();
            let (tag, msg) = decode_t(&frame, dialect).unwrap();
            log.push(summary(&msg));
            let mut reply = Vec::new();
            encode_r(&mut reply, tag, &script(&msg), dialect);
            server_end.write_all(&reply).unwrap();
        }
        log
    });
    (Conn::Unix(client_end), server)
}

fn summary(msg: &Tmsg<'_>) -> String {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match msg {
        Tmsg::Version { msize, version } => format!("Tversion {msize} {}", text(version)),
        Tmsg::Attach { fid, uname, aname, .. } => format!("Tattach {fid} {} '{}'", text(uname), text(aname)),
        Tmsg::Walk { fid, newfid, names } => {
            let names: Vec<String> = names.as_slice().iter().map(|n| text(n)).collect();
            format!("Twalk {fid} {newfid} {}", names.join("/"))
        }
        Tmsg::Open { fid, mode } => format!("Topen {fid} {mode}"),
        Tmsg::Read { fid, offset, .. } => format!("Tread {fid} {offset}"),
        Tmsg::Write { fid, offset, data } => format!("Twrite {fid} {offset} {}", text(data)),
        Tmsg::Clunk { fid } => format!("Tclunk {fid}"),
        Tmsg::Stat { fid } => format!("Tstat {fid}"),
        other => format!("{other:?}"),
    }
}

/// A script's answers to the handshake: version `version` at msize 8192.
fn greet(msg: &Tmsg<'_>, version: &'static [u8]) -> Option<Rmsg<'static>> {
    match msg {
        Tmsg::Version { .. } => Some(Rmsg::Version { msize: 8192, version }),
        Tmsg::Attach { .. } => Some(Rmsg::Attach { qid: Qid { ty: QTDIR, version: 0, path: 1 } }),
        Tmsg::Clunk { .. } => Some(Rmsg::Clunk),
        _ => None,
    }
}

/// A walk that succeeds whole.
fn walked(msg: &Tmsg<'_>) -> Rmsg<'static> {
    let Tmsg::Walk { names, .. } = msg else { panic!("not a walk: {msg:?}") };
    let qids = vec![Qid::default(); names.len()];
    Rmsg::Walk { qids: WalkQids::new(&qids).unwrap() }
}

fn config(dialect: Dialect) -> Config {
    Config { dialect, msize: MSIZE_ASK, uname: "ava".into(), aname: String::new() }
}

fn stat_named(name: &'static str, mode: u32) -> Stat<'static> {
    Stat {
        ty: 0,
        dev: 0,
        qid: Qid { ty: (mode >> 24) as u8, version: 0, path: 9 },
        mode,
        atime: 0,
        mtime: 0,
        length: 0,
        name: name.as_bytes(),
        uid: b"ava",
        gid: b"ava",
        muid: b"",
        extension: b"",
        n_uid: 1000,
        n_gid: 1000,
        n_muid: NONUNAME,
    }
}

#[test]
fn dial_asks_for_u_at_a_mib_and_takes_the_servers_msize() {
    let (conn, server) = serve(Dialect::P2000u, Box::new(|m| greet(m, b"9P2000.u").unwrap()));
    let client = Client::handshake(conn, &config(Dialect::P2000u)).unwrap();
    assert_eq!((client.dialect(), client.msize(), client.io_max()), (Dialect::P2000u, 8192, 8192 - IOHDRSZ));
    drop(client);
    assert_eq!(server.join().unwrap(), ["Tversion 1048576 9P2000.u", "Tattach 0 ava ''"]);
}

#[test]
fn a_server_that_speaks_only_9p2000_gets_plain_9p2000() {
    let (conn, server) = serve(Dialect::P2000, Box::new(|m| greet(m, b"9P2000").unwrap()));
    let client = Client::handshake(conn, &config(Dialect::P2000u)).unwrap();
    assert_eq!(client.dialect(), Dialect::P2000);
    drop(client);
    server.join().unwrap();
}

#[test]
fn an_unknown_version_answer_fails_the_handshake() {
    let (conn, server) = serve(Dialect::P2000u, Box::new(|m| greet(m, b"unknown").unwrap()));
    let err = Client::handshake(conn, &config(Dialect::P2000u)).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("\"unknown\""), "{err}");
    server.join().unwrap();
}

#[test]
fn a_server_error_keeps_its_exact_text_and_its_errno() {
    let script =
        |m: &Tmsg<'_>| greet(m, b"9P2000.u").unwrap_or(Rmsg::Error { ename: b"file does not exist", errno: 2 });
    let (conn, server) = serve(Dialect::P2000u, Box::new(script));
    let mut client = Client::handshake(conn, &config(Dialect::P2000u)).unwrap();
    let err = client.walk("/nope").unwrap_err();
    assert_eq!(err.to_string(), "file does not exist");
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    assert_eq!(ServerError::of(&err), Some(&ServerError { text: "file does not exist".into(), errno: Some(2) }));
    drop(client);
    server.join().unwrap();
}

#[test]
fn in_plain_9p2000_a_server_error_is_text_alone() {
    let script = |m: &Tmsg<'_>| greet(m, b"9P2000").unwrap_or(Rmsg::Error { ename: b"permission denied", errno: 0 });
    let (conn, server) = serve(Dialect::P2000, Box::new(script));
    let mut client = Client::handshake(conn, &config(Dialect::P2000)).unwrap();
    let err = client.walk("/x").unwrap_err();
    assert_eq!(ServerError::of(&err), Some(&ServerError { text: "permission denied".into(), errno: None }));
    drop(client);
    server.join().unwrap();
}

#[test]
fn a_walk_of_twenty_names_goes_out_as_sixteen_then_four() {
    let script = |m: &Tmsg<'_>| greet(m, b"9P2000.u").unwrap_or_else(|| walked(m));
    let (conn, server) = serve(Dialect::P2000u, Box::new(script));
    let mut client = Client::handshake(conn, &config(Dialect::P2000u)).unwrap();
    let path: Vec<String> = (0..20).map(|i| format!("d{i}")).collect();
    assert_eq!(client.walk(&path.join("/")).unwrap(), 1);
    drop(client);
    let log = server.join().unwrap();
    assert_eq!(log[2], format!("Twalk 0 1 {}", path[..16].join("/")));
    assert_eq!(log[3], format!("Twalk 1 1 {}", path[16..].join("/")));
}

#[test]
fn a_short_walk_names_the_element_that_failed_and_frees_its_fid() {
    let script =
        |m: &Tmsg<'_>| greet(m, b"9P2000.u").unwrap_or(Rmsg::Walk { qids: WalkQids::new(&[Qid::default()]).unwrap() });
    let (conn, server) = serve(Dialect::P2000u, Box::new(script));
    let mut client = Client::handshake(conn, &config(Dialect::P2000u)).unwrap();
    let err = client.walk("/a/b/c").unwrap_err();
    assert_eq!((err.kind(), err.to_string()), (io::ErrorKind::NotFound, "'b' file does not exist".into()));
    client.walk("/a").unwrap();
    drop(client);
    let log = server.join().unwrap();
    assert_eq!(log[2..], ["Twalk 0 1 a/b/c", "Twalk 0 1 a"]);
}

#[test]
fn the_root_and_dot_elements_walk_no_names() {
    let script = |m: &Tmsg<'_>| greet(m, b"9P2000.u").unwrap_or_else(|| walked(m));
    let (conn, server) = serve(Dialect::P2000u, Box::new(script));
    let mut client = Client::handshake(conn, &config(Dialect::P2000u)).unwrap();
    client.walk("/").unwrap();
    client.walk("./claude//projects/").unwrap();
    drop(client);
    assert_eq!(server.join().unwrap()[2..], ["Twalk 0 1 ", "Twalk 0 2 claude/projects"]);
}

#[test]
fn read_dir_reads_to_the_end_and_decodes_every_entry() {
    let mut reads = 0;
    let script = move |m: &Tmsg<'_>| {
        greet(m, b"9P2000.u").unwrap_or_else(|| match m {
            Tmsg::Open { .. } => Rmsg::Open { qid: Qid::default(), iounit: 0 },
            Tmsg::Read { .. } => {
                reads += 1;
                let mut data = Vec::new();
                match reads {
                    1 => ["claude", "codex"]
                        .iter()
                        .for_each(|n| encode_stat(&mut data, &stat_named(n, DMDIR | 0o555), Dialect::P2000u)),
                    2 => encode_stat(&mut data, &stat_named("README", 0o444), Dialect::P2000u),
                    _ => {}
                }
                Rmsg::Read { data: data.leak() }
            }
            _ => walked(m),
        })
    };
    let (conn, server) = serve(Dialect::P2000u, Box::new(script));
    let mut client = Client::handshake(conn, &config(Dialect::P2000u)).unwrap();
    let fid = client.walk("/").unwrap();
    client.open(fid, OREAD).unwrap();
    let entries = client.read_dir(fid).unwrap();
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["claude", "codex", "README"]);
    assert!(entries[0].is_dir() && !entries[2].is_dir());
    drop(client);
    let log = server.join().unwrap();
    let size = |name| crate::proto::stat_size(&stat_named(name, 0), Dialect::P2000u) as u64;
    let (first, second) = (size("claude") + size("codex"), size("README"));
    let offsets = [0, first, first + second].map(|offset| format!("Tread 1 {offset}"));
    assert_eq!(log[4..], offsets);
}

#[test]
fn clunk_frees_the_fid_even_when_the_server_refuses() {
    let script = |m: &Tmsg<'_>| match m {
        Tmsg::Clunk { .. } => Rmsg::Error { ename: b"unknown fid", errno: 9 },
        _ => greet(m, b"9P2000.u").unwrap_or_else(|| walked(m)),
    };
    let (conn, server) = serve(Dialect::P2000u, Box::new(script));
    let mut client = Client::handshake(conn, &config(Dialect::P2000u)).unwrap();
    let fid = client.walk("/a").unwrap();
    assert!(client.clunk(fid).is_err());
    assert_eq!(client.walk("/b").unwrap(), fid);
    drop(client);
    server.join().unwrap();
}

#[test]
fn rpc_replies_outlive_the_next_call_and_recv_hands_back_rerror_as_a_reply() {
    let script = |m: &Tmsg<'_>| match m {
        Tmsg::Stat { .. } => Rmsg::Stat { stat: stat_named("README", 0o444) },
        Tmsg::Flush { .. } => Rmsg::Error { ename: b"not now", errno: 11 },
        _ => greet(m, b"9P2000.u").unwrap(),
    };
    let (conn, server) = serve(Dialect::P2000u, Box::new(script));
    let mut client = Client::handshake(conn, &config(Dialect::P2000u)).unwrap();
    let first = client.rpc(&Tmsg::Stat { fid: 0 }).unwrap();
    let tag = client.send(&Tmsg::Flush { oldtag: 7 }).unwrap();
    let second = client.recv().unwrap();
    assert!(matches!(first.msg(), Rmsg::Stat { stat } if stat.name == b"README"));
    assert_eq!(second.tag(), tag);
    assert_eq!(second.error().unwrap().to_string(), "not now");
    drop(client);
    server.join().unwrap();
}
