//! The chat caps through the daemon: `--max-chat-messages` (a listing past
//! it answers an error, never a shorter list) and `--max-chats` (indexes
//! kept, the least recently used reused: two agents read alternately
//! through one index both read right).

mod active_fakes;
mod chat_fakes;
mod common;

use chat_fakes::*;
use common::*;

const TOO_LONG: &str = "No buffer space available";

/// What 9P2000.u says past the cap: the errno's text, then why (issue 21,
/// defect 6: a limit explains itself where the dialect carries the errno).
const TOO_LONG_U: &str = "No buffer space available: more messages than a chat takes (--max-chat-messages)";

fn messages(n: u64) -> Vec<u8> {
    lines(&(0..n).map(|i| claude_user(&format!("message {i}"), i)).collect::<Vec<_>>())
}

#[test]
fn past_max_chat_messages_the_listing_answers_an_error_not_a_shorter_list() {
    let w = ChatWorld::new();
    let path = w.claude(100, &uuid(1), &messages(5));
    w.claude(101, &uuid(2), &messages(6));
    let d = w.daemon(&["--max-chat-messages", "5"]);
    let mut c = d.session(Dialect::P2000u);

    // At the cap: all of them.
    assert_eq!(chat_names(&mut c, &chat_dir("claude", 100)).len(), 5);
    // Past it: the open of the listing answers the error.
    let err = c.try_list(&chat_dir("claude", 101), LIST_FID, c.msize - IOHDRSZ).expect_err("a listing past the cap");
    assert_eq!(err, TOO_LONG_U);
    walk_whole(&mut c, &chat_dir("claude", 101), LIST_FID);
    let (text, errno) = c.open(LIST_FID, OREAD).expect_error();
    assert_eq!((text.as_str(), errno), (TOO_LONG_U, libc::ENOBUFS as u32));
    // Plain 9P2000 clients map the text itself: Linux's string alone.
    let mut plain = d.session(Dialect::P2000);
    let err = plain.try_list(&chat_dir("claude", 101), LIST_FID, plain.msize - IOHDRSZ).expect_err("past the cap");
    assert_eq!(err, TOO_LONG);
    c.clunk_ok(LIST_FID);

    // The chat at the cap grows past it: the same error, on the next look.
    append(&path, &lines(&[claude_assistant("one too many", 9)]));
    let err = c.try_list(&chat_dir("claude", 100), LIST_FID, c.msize - IOHDRSZ).expect_err("a listing past the cap");
    assert_eq!(err, TOO_LONG_U);
    // The daemon still answers everything else.
    assert_eq!(c.cat("/pid", MSG_FID), format!("{}\n", d.pid).as_bytes());
    assert!(c.try_list("/active/claude", LIST_FID, c.msize - IOHDRSZ).is_ok());
}

#[test]
fn one_index_serves_two_agents_read_alternately() {
    let w = ChatWorld::new();
    let a = lines(&[claude_user("from a", 0), claude_assistant("answer a", 1)]);
    let b = lines(&[claude_user("from b", 0), claude_thinking("thinking b", 1), claude_assistant("answer b", 2)]);
    let path_a = w.claude(100, &uuid(1), &a);
    w.codex(200, &uuid(2), &lines(&[codex_meta(&uuid(2), 0), codex_message("user", "from codex", 1)]));
    w.claude(101, &uuid(3), &b);
    let d = w.daemon(&["--max-chats", "1"]);
    let mut c = d.session(Dialect::P2000);
    let want_a =
        vec![("00000000-user".to_string(), "from a\n".to_string()), ("00000001-assistant".into(), "answer a\n".into())];
    let want_b = vec![
        ("00000000-user".to_string(), "from b\n".to_string()),
        ("00000001-thinking".into(), "thinking b\n".into()),
        ("00000002-assistant".into(), "answer b\n".into()),
    ];
    let want_codex = vec![("00000000-user".to_string(), "from codex\n".to_string())];
    for round in 0..4 {
        assert_eq!(chat_text(&mut c, &chat_dir("claude", 100)), want_a, "round {round}");
        assert_eq!(chat_text(&mut c, &chat_dir("claude", 101)), want_b, "round {round}");
        assert_eq!(chat_text(&mut c, &chat_dir("codex", 200)), want_codex, "round {round}");
    }
    // Growth seen after the index was reused by others.
    append(&path_a, &lines(&[claude_user("more a", 2)]));
    assert_eq!(chat_names(&mut c, &chat_dir("claude", 101)).len(), 3);
    assert_eq!(chat_names(&mut c, &chat_dir("claude", 100)), ["00000000-user", "00000001-assistant", "00000002-user"]);

    // Interleaved one message at a time, from two connections.
    let mut c2 = d.session(Dialect::P2000);
    for i in 0..3 {
        let (_, x) = read_msg(
            &mut c,
            &format!("{}/{}", chat_dir("claude", 100), ["00000000-user", "00000001-assistant", "00000002-user"][i]),
        );
        assert_eq!(x, [&b"from a\n"[..], b"answer a\n", b"more a\n"][i]);
        let (_, y) = read_msg(&mut c2, &format!("{}/{}", chat_dir("claude", 101), want_b[i].0));
        assert_eq!(y, want_b[i].1.as_bytes());
    }
}

#[test]
fn a_message_held_open_while_its_index_is_reused_never_reads_another_chat() {
    let w = ChatWorld::new();
    w.claude(100, &uuid(1), &lines(&[claude_user("from a", 0)]));
    w.claude(101, &uuid(3), &lines(&[claude_user("from b, and longer", 0)]));
    let d = w.daemon(&["--max-chats", "1"]);
    let mut c = d.session(Dialect::P2000);
    let held = 0xC4A7_00FF;
    walk_whole(&mut c, &format!("{}/00000000-user", chat_dir("claude", 100)), held);
    c.open_ok(held, OREAD);
    assert_eq!(chat_text(&mut c, &chat_dir("claude", 101)).len(), 1);
    let r = c.read(held, 0, 100);
    if !r.is_error() {
        assert_eq!(r.data(), b"from a\n", "a read of a's message served b's bytes");
    }
    c.clunk_ok(held);
}
