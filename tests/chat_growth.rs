//! `chat/` as its transcript changes under the daemon: ids that hold as
//! it grows, a half-written line that waits for its newline, and the three
//! ways a transcript becomes another file — rewritten in place, truncated,
//! unlinked and created again — each indexed again from the start. And the
//! seed's end-to-end: a thousand messages appended, all listed, every read
//! as long as its stat.

mod active_fakes;
mod chat_fakes;
mod common;

use std::fs;

use chat_fakes::*;
use common::*;

/// A fid the tests hold open across a change, apart from the helpers'.
const HELD: u32 = 0xC4A7_00FF;

const SID: &str = "5f1c7a52-3b4e-4d61-9a0b-2c8e7f6d1a90";

fn start(body: &[u8]) -> (ChatWorld, std::path::PathBuf, Daemon) {
    let w = ChatWorld::new();
    let path = w.claude(100, SID, body);
    let d = w.daemon(&[]);
    (w, path, d)
}

fn dir() -> String {
    chat_dir("claude", 100)
}

#[test]
fn ids_hold_as_the_transcript_grows() {
    let (_w, path, d) = start(&lines(&[claude_user("one", 0), claude_assistant("two", 1)]));
    let mut c = d.session(Dialect::P2000);
    let before = list_chat(&mut c, &dir());
    assert_eq!(names(&before), ["00000000-user", "00000001-assistant"]);
    let texts_before = chat_text(&mut c, &dir());

    append(
        &path,
        &lines(&[claude_title("a title"), claude_tool_use("t1", "Grep", serde_json::json!({"pattern":"x"}), 2)]),
    );
    append(&path, &lines(&[claude_tool_result("t1", "found", 3), claude_user("three", 4)]));
    let after = list_chat(&mut c, &dir());
    assert_eq!(
        names(&after),
        ["00000000-user", "00000001-assistant", "00000002-grep", "00000003-grep-result", "00000004-user"]
    );
    for (old, new) in before.iter().zip(&after) {
        assert_eq!(
            (&old.name, old.qid, old.length, old.mtime),
            (&new.name, new.qid, new.length, new.mtime),
            "an old message changed"
        );
    }
    let texts_after = chat_text(&mut c, &dir());
    assert_eq!(texts_after[..2], texts_before[..], "the old messages read the same");
    assert_eq!(texts_after[4].1, "three\n");

    // A message opened before the file grew still reads whole after.
    let first = format!("{}/00000000-user", dir());
    walk_whole(&mut c, &first, HELD);
    c.open_ok(HELD, OREAD);
    append(&path, &lines(&[claude_user("four", 5)]));
    assert_eq!(chat_names(&mut c, &dir()).len(), 6);
    assert_eq!(c.read_all(HELD), b"one\n");
    c.clunk_ok(HELD);
}

#[test]
fn a_half_written_line_waits_for_its_newline() {
    let (_w, path, d) = start(&lines(&[claude_user("one", 0)]));
    let mut c = d.session(Dialect::P2000);
    assert_eq!(chat_names(&mut c, &dir()), ["00000000-user"]);

    let line = claude_assistant("written in three pieces", 1);
    let (a, rest) = line.split_at(20);
    let (b, tail) = rest.split_at(rest.len() - 1);
    append(&path, a.as_bytes());
    assert_eq!(chat_names(&mut c, &dir()), ["00000000-user"], "a line without its newline is not a message yet");
    assert!(!resolves(&mut c, &format!("{}/00000001-assistant", dir())));
    append(&path, b.as_bytes());
    append(&path, tail.as_bytes());
    assert_eq!(chat_names(&mut c, &dir()), ["00000000-user"], "the whole record, still without its newline");
    append(&path, b"\n");
    let now = chat_text(&mut c, &dir());
    assert_eq!(
        now,
        [("00000000-user".into(), "one\n".into()), ("00000001-assistant".into(), "written in three pieces\n".into())]
    );

    // A half line after a whole one: the whole one shows, the half waits.
    let next = claude_user("five", 2);
    let mut bytes = lines(&[claude_user("four", 2)]);
    bytes.extend_from_slice(&next.as_bytes()[..next.len() / 2]);
    append(&path, &bytes);
    assert_eq!(chat_names(&mut c, &dir()), ["00000000-user", "00000001-assistant", "00000002-user"]);
    let mut rest = next.as_bytes()[next.len() / 2..].to_vec();
    rest.push(b'\n');
    append(&path, &rest);
    let texts = chat_text(&mut c, &dir());
    assert_eq!(texts.len(), 4);
    assert_eq!(texts[3], ("00000003-user".into(), "five\n".into()));
}

/// The messages a fresh daemon serves for `body`: what any daemon must
/// serve once it has seen the file change into `body`.
fn fresh(body: &[u8]) -> Vec<(String, String)> {
    let (_w, _path, d) = start(body);
    let mut c = d.session(Dialect::P2000);
    chat_text(&mut c, &dir())
}

#[test]
fn a_transcript_rewritten_in_place_is_indexed_again_from_the_start() {
    let old = lines(&[padded(&claude_user("old question", 0), 200), padded(&claude_assistant("old answer", 1), 300)]);
    let (_w, path, d) = start(&old);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(chat_names(&mut c, &dir()), ["00000000-user", "00000001-assistant"]);

    // The same size, other bytes: other kinds at other offsets.
    let same_size = lines(&[
        padded(&claude_assistant("new answer first", 10), 250),
        padded(&claude_thinking("then thinking", 11), 250),
    ]);
    assert_eq!(same_size.len(), old.len());
    rewrite_in_place(&path, &same_size);
    let want = fresh(&same_size);
    assert_eq!(names_of(&want), ["00000000-assistant", "00000001-thinking"]);
    assert_eq!(chat_text(&mut c, &dir()), want, "a same-size rewrite");

    // Longer, and different from its first byte.
    let longer = lines(&[
        padded(&claude_tool_use("t9", "Edit", serde_json::json!({"file_path":"/x"}), 20), 260),
        claude_tool_result("t9", "edited", 21),
        claude_user("and more", 22),
    ]);
    assert!(longer.len() > same_size.len());
    rewrite_in_place(&path, &longer);
    let want = fresh(&longer);
    assert_eq!(names_of(&want), ["00000000-edit", "00000001-edit-result", "00000002-user"]);
    assert_eq!(chat_text(&mut c, &dir()), want, "a longer rewrite");
}

#[test]
fn a_rewrite_that_keeps_the_first_bytes_but_changes_the_last_is_indexed_again() {
    let first = padded(&claude_user("the same first line", 0), 200);
    let old = lines(&[first.clone(), padded(&claude_assistant("old last", 1), 200)]);
    let (_w, path, d) = start(&old);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(chat_names(&mut c, &dir()), ["00000000-user", "00000001-assistant"]);
    let new = lines(&[first, padded(&claude_user("new last", 2), 200), claude_assistant("grown", 3)]);
    rewrite_in_place(&path, &new);
    let want = fresh(&new);
    assert_eq!(names_of(&want), ["00000000-user", "00000001-user", "00000002-assistant"]);
    assert_eq!(chat_text(&mut c, &dir()), want);
}

#[test]
fn a_truncated_transcript_starts_over() {
    let old = lines(&[claude_user("one", 0), claude_assistant("two", 1), claude_user("three", 2)]);
    let (_w, path, d) = start(&old);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(chat_names(&mut c, &dir()).len(), 3);

    let shorter = lines(&[claude_assistant("only this", 5)]);
    rewrite_in_place(&path, &shorter);
    assert_eq!(chat_text(&mut c, &dir()), [("00000000-assistant".into(), "only this\n".into())]);
    assert!(!resolves(&mut c, &format!("{}/00000002-user", dir())));

    // Emptied: an empty chat, not an error.
    rewrite_in_place(&path, b"");
    assert_eq!(chat_names(&mut c, &dir()), Vec::<String>::new());

    // And growing again from nothing.
    append(&path, &lines(&[claude_user("again", 6)]));
    assert_eq!(chat_text(&mut c, &dir()), [("00000000-user".into(), "again\n".into())]);
}

#[test]
fn a_transcript_unlinked_and_created_again_starts_over() {
    // The new file's first and last 64+ bytes are the old file's, at the
    // same size: only its identity (a new inode) says it is another file.
    let head = padded(&claude_user("the same first line", 0), 200);
    let tail = padded(&claude_user("the same last line", 9), 200);
    let old = lines(&[head.clone(), padded(&claude_assistant("old middle", 1), 220), tail.clone()]);
    let (_w, path, d) = start(&old);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(chat_names(&mut c, &dir()), ["00000000-user", "00000001-assistant", "00000002-user"]);
    // A message held open across the change.
    walk_whole(&mut c, &format!("{}/00000001-assistant", dir()), HELD);
    c.open_ok(HELD, OREAD);

    let new = lines(&[head, padded(&claude_thinking("new middle", 1), 220), tail]);
    assert_eq!(new.len(), old.len());
    let ino = std::os::unix::fs::MetadataExt::ino(&fs::metadata(&path).unwrap());
    fs::remove_file(&path).unwrap();
    fs::write(&path, &new).unwrap();
    assert_ne!(std::os::unix::fs::MetadataExt::ino(&fs::metadata(&path).unwrap()), ino, "the test needs a new inode");

    let want = fresh(&new);
    assert_eq!(names_of(&want), ["00000000-user", "00000001-thinking", "00000002-user"]);
    assert_eq!(chat_text(&mut c, &dir()), want);
    // The fid opened on the old file reads the old file or answers an
    // error; it never mixes the two.
    let r = c.read(HELD, 0, 8000);
    if !r.is_error() {
        assert_eq!(r.data(), b"old middle\n");
    }
    c.clunk_ok(HELD);
}

fn names_of(v: &[(String, String)]) -> Vec<&str> {
    v.iter().map(|(n, _)| n.as_str()).collect()
}

/// The seed's e2e: 1,000 messages appended (in ten bursts, listing after
/// each), all listed, every read as long as its stat.
#[test]
fn a_thousand_appended_messages_are_all_listed_and_read_at_their_stat_length() {
    let (_w, path, d) = start(b"");
    let mut c = d.session(Dialect::P2000);
    assert!(chat_names(&mut c, &dir()).is_empty());
    let mut listed: Vec<Entry> = Vec::new();
    for burst in 0..10u64 {
        let mut ls = Vec::new();
        for i in burst * 100..(burst + 1) * 100 {
            ls.push(match i % 4 {
                0 => claude_user(&format!("prompt {i}: \"do\" the\tthing é"), i),
                1 => claude_tool_use(&format!("t{i}"), "Bash", serde_json::json!({"command": format!("echo {i}")}), i),
                2 => claude_tool_result(&format!("t{}", i - 1), &format!("{i}\n").repeat((i % 13) as usize), i),
                _ => claude_assistant(&"x".repeat(i as usize), i),
            });
        }
        append(&path, &lines(&ls));
        let now = list_chat(&mut c, &dir());
        assert_eq!(now.len() as u64, (burst + 1) * 100);
        assert_eq!(ids(&now[..listed.len()]), ids(&listed), "burst {burst} changed an old name");
        listed = now;
    }
    let kinds = ["user", "bash", "bash-result", "assistant"];
    for (i, e) in listed.iter().enumerate() {
        assert_eq!(e.name, format!("{i:08}-{}", kinds[i % 4]));
    }
    let read = read_chat(&mut c, &dir());
    assert_eq!(read.len(), 1000);
    for (i, (e, data)) in read.iter().enumerate() {
        assert_eq!(data.len() as u64, e.length, "{}", e.name);
        if i % 4 == 3 {
            assert_eq!(data.len(), i + 1, "{}", e.name);
        }
    }
    // As a kernel mount does: a fid held for every message at once, each
    // stat'd and read through its own.
    let fid = |i: usize| 0x0100_0000 + i as u32;
    for (i, (e, _)) in read.iter().enumerate() {
        walk_whole(&mut c, &format!("{}/{}", dir(), e.name), fid(i));
    }
    let (mut stat_sum, mut read_sum) = (0u64, 0u64);
    for (i, (e, _)) in read.iter().enumerate() {
        let st = c.stat_ok(fid(i));
        assert_eq!(st.name, e.name);
        stat_sum += st.length;
        read_sum += c.cat_fid(fid(i)).len() as u64;
    }
    for i in 0..read.len() {
        c.clunk_ok(fid(i));
    }
    assert_eq!(read_sum, stat_sum);
    // An empty result is an empty file, not a missing one.
    assert_eq!((read[26].0.name.as_str(), read[26].1.as_slice()), ("00000026-bash-result", &b""[..]));
    assert_eq!(read[2].1, b"2\n2\n");
}

/// A transcript removed for good: the agent's directory stops listing
/// `chat` (and `transcript`), and `chat/` must not go on serving the
/// messages of a file that is no longer there.
#[test]
fn a_chat_whose_transcript_is_gone_is_no_longer_served() {
    let (_w, path, d) = start(&lines(&[claude_user("one", 0)]));
    let mut c = d.session(Dialect::P2000);
    assert_eq!(chat_names(&mut c, &dir()), ["00000000-user"]);
    fs::remove_file(&path).unwrap();
    let agent = names(&c.list("/active/claude/100", LIST_FID, c.msize - IOHDRSZ));
    assert!(!agent.contains(&"chat".to_string()) && !agent.contains(&"transcript".to_string()), "{agent:?}");
    let listed = c.try_list(&dir(), LIST_FID, c.msize - IOHDRSZ).map(|e| names(&e));
    assert!(listed.is_err(), "chat/ of a removed transcript still lists {listed:?}");
    assert!(!resolves(&mut c, &format!("{}/00000000-user", dir())), "a message of a removed transcript still resolves");
}

/// Records longer than what the daemon feeds a turn (256 KiB) and than
/// the window it maps (4 MiB): each grows to hold one, whole or still
/// being written.
#[test]
fn a_record_longer_than_the_indexing_window_is_indexed_whole() {
    let long = |n: usize, tag: &str| {
        let mut s = String::with_capacity(n + 64);
        let mut i = 0;
        while s.len() < n {
            s.push_str(&format!("{tag} {i}: \"quoted\" \\ back\tslash é\n"));
            i += 1;
        }
        s
    };
    let three = long(3 << 20, "three");
    let (_w, path, d) = start(&lines(&[
        claude_user("go", 0),
        claude_tool_use("t1", "Read", serde_json::json!({"file_path":"/big"}), 1),
        claude_tool_result("t1", &three, 2),
        claude_assistant("read it", 3),
    ]));
    let mut c = big_conn(&d);
    let got = chat_text(&mut c, &dir());
    assert_eq!(names_of(&got), ["00000000-user", "00000001-read", "00000002-read-result", "00000003-assistant"]);
    assert!(got[2].1 == three, "the 3 MB result reads as its text");
    let whole = got[2].1.as_bytes();
    let path2 = format!("{}/00000002-read-result", dir());
    walk_whole(&mut c, &path2, MSG_FID);
    c.open_ok(MSG_FID, OREAD);
    for off in [0u64, (1 << 20) - 3, 1 << 20, (2 << 20) + 1, whole.len() as u64 - 5] {
        let data = c.read_ok(MSG_FID, off, 100);
        let want = &whole[off as usize..][..100.min(whole.len() - off as usize)];
        assert!(data == want, "read at {off}");
    }
    c.clunk_ok(MSG_FID);

    // A 2.5 MB record written in two halves: nothing, then the whole.
    let line = claude_assistant(&long(5 << 19, "half"), 4);
    let (a, b) = line.as_bytes().split_at(line.len() / 2);
    append(&path, a);
    assert_eq!(chat_names(&mut c, &dir()).len(), 4);
    append(&path, b);
    assert_eq!(chat_names(&mut c, &dir()).len(), 4, "still no newline");
    append(&path, b"\n");
    append(&path, &lines(&[claude_user("after", 5)]));
    let got = chat_text(&mut c, &dir());
    assert_eq!(names_of(&got)[4..], ["00000004-assistant", "00000005-user"]);
    assert!(got[4].1 == long(5 << 19, "half"), "the 2.5 MB reply reads as its text (which ends in a newline already)");

    // A 9 MB record: more than two mapped windows wide.
    let nine = long(9 << 20, "nine");
    append(&path, &lines(&[claude_assistant(&nine, 6), claude_user("after nine", 7)]));
    let got = chat_text(&mut c, &dir());
    assert_eq!(names_of(&got)[6..], ["00000006-assistant", "00000007-user"]);
    assert!(got[6].1 == nine, "the 9 MB reply reads as its text");
}

/// A connection at a 1 MiB msize, so a long message is a few reads.
fn big_conn(d: &Daemon) -> Conn {
    let mut c = d.connect();
    c.version(1 << 20, "9P2000");
    c.attach_ok(ROOT);
    c
}
