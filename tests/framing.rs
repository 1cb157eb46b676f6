//! Framing: CONFORMANCE items 5–7. What a message boundary is, and what
//! happens when a peer lies about one.

mod common;

use common::*;

/// A versioned, attached plain 9P2000 session at msize 8192.
fn session() -> (Daemon, Conn) {
    let d = Daemon::start(&[]);
    let c = d.session(Dialect::P2000);
    (d, c)
}

/// The session still answers: a whole stat of the root comes back.
fn still_serves(c: &mut Conn) {
    assert_eq!(c.stat_ok(ROOT).qid.ty, QTDIR);
}

#[test]
fn a_size_under_seven_closes_the_connection() {
    let (_d, mut c) = session();
    c.send_raw(&[6, 0, 0, 0, msg::TCLUNK, 1, 0]);
    c.expect_closed();
}

#[test]
fn a_size_of_zero_closes_the_connection() {
    let (_d, mut c) = session();
    c.send_raw(&[0, 0, 0, 0]);
    c.expect_closed();
}

#[test]
fn a_size_over_the_msize_closes_the_connection() {
    let (_d, mut c) = session();
    c.send_raw(&(SESSION_MSIZE + 1).to_le_bytes());
    c.expect_closed();
}

#[test]
fn a_size_of_four_gibibytes_closes_the_connection_and_costs_no_memory() {
    let (d, mut c) = session();
    let before = d.rss_kib();
    c.send_raw(&[0xff, 0xff, 0xff, 0xff, msg::TREAD, 1, 0]);
    c.expect_closed();
    let grown = d.rss_kib().saturating_sub(before);
    assert!(grown < 16 * 1024, "RSS grew {grown} KiB on one bad size field");
}

#[test]
fn before_tversion_a_size_over_the_servers_cap_closes_the_connection() {
    let d = Daemon::start(&["--msize", "8192"]);
    let mut c = d.connect();
    c.send_raw(&[0x01, 0x00, 0x01, 0x00]);
    c.expect_closed();
}

#[test]
fn a_bad_size_on_one_connection_leaves_the_others_served() {
    let (d, mut bad) = session();
    let mut good = d.session(Dialect::P2000);
    bad.send_raw(&[3, 0, 0, 0]);
    bad.expect_closed();
    still_serves(&mut good);
}

#[test]
fn a_message_fed_one_byte_at_a_time_is_answered() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    let mut bytes = c.encode(NOTAG, &Tmsg::Version { msize: 8192, version: b"9P2000" });
    bytes
        .extend(c.encode(1, &Tmsg::Attach { fid: ROOT, afid: NOFID, uname: b"glenda", aname: b"", n_uname: NONUNAME }));
    bytes.extend(c.encode(2, &Tmsg::Walk { fid: ROOT, newfid: 1, names: WalkNames::new(&[b"pid"]).unwrap() }));
    bytes.extend(c.encode(3, &Tmsg::Open { fid: 1, mode: OREAD }));
    bytes.extend(c.encode(4, &Tmsg::Read { fid: 1, offset: 0, count: 100 }));
    for b in &bytes {
        c.send_raw(std::slice::from_ref(b));
    }
    let tags: Vec<u16> = (0..4).map(|_| c.recv().tag()).collect();
    assert_eq!(tags, [NOTAG, 1, 2, 3]);
    assert_eq!(c.recv().data(), format!("{}\n", d.pid).into_bytes());
}

#[test]
fn one_byte_at_a_time_and_all_at_once_give_the_same_replies() {
    let d = Daemon::start(&[]);
    let script = |c: &Conn| {
        let mut bytes = c.encode(NOTAG, &Tmsg::Version { msize: 8192, version: b"9P2000" });
        bytes.extend(
            c.encode(1, &Tmsg::Attach { fid: ROOT, afid: NOFID, uname: b"glenda", aname: b"", n_uname: NONUNAME }),
        );
        bytes.extend(c.encode(2, &Tmsg::Walk { fid: ROOT, newfid: 1, names: WalkNames::new(&[b"README"]).unwrap() }));
        bytes.extend(c.encode(3, &Tmsg::Open { fid: 1, mode: OREAD }));
        bytes.extend(c.encode(4, &Tmsg::Read { fid: 1, offset: 0, count: 8000 }));
        bytes.extend(c.encode(5, &Tmsg::Walk { fid: ROOT, newfid: 2, names: WalkNames::new(&[b"nosuch"]).unwrap() }));
        bytes.extend(c.encode(6, &Tmsg::Stat { fid: 1 }));
        bytes.extend(c.encode(7, &Tmsg::Clunk { fid: 1 }));
        bytes
    };
    let mut whole = d.connect();
    let bytes = script(&whole);
    whole.send_raw(&bytes);
    let at_once: Vec<Vec<u8>> = (0..8).map(|_| whole.recv().bytes).collect();
    let mut dribble = d.connect();
    for b in &bytes {
        dribble.send_raw(std::slice::from_ref(b));
    }
    let byte_wise: Vec<Vec<u8>> = (0..8).map(|_| dribble.recv().bytes).collect();
    assert_eq!(byte_wise, at_once);
}

#[test]
fn many_messages_in_one_write_are_each_answered_in_order() {
    let (_d, mut c) = session();
    let mut batch = Vec::new();
    for i in 0..200u16 {
        batch.extend(c.encode(i, &Tmsg::Stat { fid: ROOT }));
    }
    c.send_raw(&batch);
    for i in 0..200u16 {
        let r = c.recv();
        assert_eq!(r.tag(), i);
        assert!(matches!(r.msg(), Rmsg::Stat { .. }), "{r:?}");
    }
}

#[test]
fn a_message_split_across_writes_at_every_point_is_answered() {
    let (_d, mut c) = session();
    let whole = c.encode(9, &Tmsg::Walk { fid: ROOT, newfid: 1, names: WalkNames::new(&[b"README"]).unwrap() });
    for cut in 1..whole.len() {
        c.send_raw(&whole[..cut]);
        c.send_raw(&whole[cut..]);
        let r = c.recv();
        assert_eq!((r.tag(), r.qids().len()), (9, 1), "cut at {cut}");
        c.clunk_ok(1);
    }
}

#[test]
fn a_truncated_body_is_answered_with_rerror() {
    let (_d, mut c) = session();
    // Tclunk with a fid of three bytes: framed, but the body is short.
    c.send_raw(&message(msg::TCLUNK, 5, &[1, 0, 0]));
    let r = c.recv();
    assert_eq!(r.tag(), 5);
    r.expect_error();
}

#[test]
fn after_a_truncated_body_the_connection_still_works() {
    let (_d, mut c) = session();
    c.send_raw(&message(msg::TCLUNK, 5, &[1, 0, 0]));
    c.recv().expect_error();
    still_serves(&mut c);
}

#[test]
fn trailing_bytes_after_a_message_are_answered_with_rerror() {
    let (_d, mut c) = session();
    let mut body = ROOT.to_le_bytes().to_vec();
    body.extend_from_slice(b"junk");
    c.send_raw(&message(msg::TSTAT, 6, &body));
    let r = c.recv();
    assert_eq!(r.tag(), 6);
    r.expect_error();
    still_serves(&mut c);
}

#[test]
fn a_string_running_past_the_end_is_answered_with_rerror() {
    let (_d, mut c) = session();
    let mut body = Vec::new();
    body.extend_from_slice(&ROOT.to_le_bytes());
    body.extend_from_slice(&1u32.to_le_bytes());
    body.extend_from_slice(&1u16.to_le_bytes());
    body.extend_from_slice(&200u16.to_le_bytes());
    body.extend_from_slice(b"README");
    c.send_raw(&message(msg::TWALK, 7, &body));
    c.recv().expect_error();
    c.clunk(1).assert_error("Bad file descriptor");
}

#[test]
fn an_nwname_past_the_bytes_left_is_answered_with_rerror() {
    let (_d, mut c) = session();
    let mut body = Vec::new();
    body.extend_from_slice(&ROOT.to_le_bytes());
    body.extend_from_slice(&1u32.to_le_bytes());
    body.extend_from_slice(&5u16.to_le_bytes());
    body.extend_from_slice(&6u16.to_le_bytes());
    body.extend_from_slice(b"README");
    c.send_raw(&message(msg::TWALK, 8, &body));
    c.recv().expect_error();
    still_serves(&mut c);
}

#[test]
fn an_nwname_of_65535_is_answered_with_rerror() {
    let (_d, mut c) = session();
    let mut body = Vec::new();
    body.extend_from_slice(&ROOT.to_le_bytes());
    body.extend_from_slice(&1u32.to_le_bytes());
    body.extend_from_slice(&u16::MAX.to_le_bytes());
    c.send_raw(&message(msg::TWALK, 8, &body));
    c.recv().expect_error();
    still_serves(&mut c);
}

#[test]
fn a_twrite_count_past_the_bytes_left_is_answered_with_rerror() {
    let (_d, mut c) = session();
    c.open_path("/README", 1);
    let mut body = Vec::new();
    body.extend_from_slice(&1u32.to_le_bytes());
    body.extend_from_slice(&0u64.to_le_bytes());
    body.extend_from_slice(&u32::MAX.to_le_bytes());
    body.extend_from_slice(b"x");
    c.send_raw(&message(msg::TWRITE, 9, &body));
    c.recv().expect_error();
    still_serves(&mut c);
}

#[test]
fn an_unknown_type_is_answered_with_rerror_on_its_tag() {
    let (_d, mut c) = session();
    c.send_raw(&message(200, 33, b"whatever"));
    let r = c.recv();
    assert_eq!(r.tag(), 33);
    r.expect_error();
}

#[test]
fn after_an_unknown_type_the_connection_still_works() {
    let (_d, mut c) = session();
    c.send_raw(&message(200, 33, b""));
    c.recv().expect_error();
    still_serves(&mut c);
}

#[test]
fn terror_which_does_not_exist_is_answered_with_rerror() {
    let (_d, mut c) = session();
    c.send_raw(&message(msg::TERROR, 34, b""));
    c.recv().expect_error();
    still_serves(&mut c);
}

#[test]
fn an_r_message_sent_as_a_request_is_answered_with_rerror() {
    let (_d, mut c) = session();
    let mut rclunk = Vec::new();
    proto::encode_r(&mut rclunk, 35, &Rmsg::Clunk, Dialect::P2000);
    c.send_raw(&rclunk);
    let r = c.recv();
    assert_eq!(r.tag(), 35);
    r.expect_error();
    still_serves(&mut c);
}

#[test]
fn an_rversion_sent_as_a_request_is_answered_with_rerror() {
    let (_d, mut c) = session();
    let mut rversion = Vec::new();
    proto::encode_r(&mut rversion, 36, &Rmsg::Version { msize: 8192, version: b"9P2000" }, Dialect::P2000);
    c.send_raw(&rversion);
    let r = c.recv();
    assert_eq!(r.tag(), 36);
    r.expect_error();
    still_serves(&mut c);
}

#[test]
fn a_nine_p_2000_l_message_in_a_nine_p_2000_session_is_answered_with_rerror() {
    let (_d, mut c) = session();
    // Tgetattr (24): fid[4] request_mask[8].
    let mut body = ROOT.to_le_bytes().to_vec();
    body.extend_from_slice(&u64::MAX.to_le_bytes());
    c.send_raw(&message(24, 37, &body));
    let r = c.recv();
    assert_eq!(r.tag(), 37);
    r.expect_error();
    still_serves(&mut c);
}

#[test]
fn a_tlopen_in_a_nine_p_2000_u_session_is_answered_with_rerror() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000u);
    // Tlopen (12): fid[4] flags[4].
    let mut body = ROOT.to_le_bytes().to_vec();
    body.extend_from_slice(&0u32.to_le_bytes());
    c.send_raw(&message(12, 38, &body));
    let r = c.recv();
    assert_eq!(r.tag(), 38);
    let (_, errno) = r.expect_error();
    assert_ne!(errno, 0);
}

#[test]
fn a_frame_of_just_a_header_is_answered_with_rerror() {
    let (_d, mut c) = session();
    c.send_raw(&message(msg::TSTAT, 39, b""));
    let r = c.recv();
    assert_eq!(r.tag(), 39);
    r.expect_error();
    still_serves(&mut c);
}

#[test]
fn a_message_of_exactly_the_msize_is_accepted() {
    let (_d, mut c) = session();
    // A Twalk padded with names to exactly msize bytes would be refused for
    // its names; a Twrite of msize bytes is framed and refused for writing.
    c.open_path("/README", 1);
    let data = vec![b'x'; (SESSION_MSIZE - 23) as usize];
    let bytes = c.encode(40, &Tmsg::Write { fid: 1, offset: 0, data: &data });
    assert_eq!(bytes.len(), SESSION_MSIZE as usize);
    c.send_raw(&bytes);
    let r = c.recv();
    assert_eq!(r.tag(), 40);
    r.assert_error(READ_ONLY);
    still_serves(&mut c);
}

#[test]
fn garbage_before_tversion_closes_the_connection() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    c.expect_closed();
}
