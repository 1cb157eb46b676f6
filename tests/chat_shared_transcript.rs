//! Two agents whose sessions resolve to one transcript share its chat
//! index, and concurrent readers of both never see it torn (defect 2 of
//! issue "The server core"): each refresh once fed windows at the index's
//! end rather than at the offset they were read from, so two refreshes of
//! one index indexed bytes twice (576 and 575 entries for 511 messages),
//! and a listing taken while another client's open refreshed it could
//! have every name empty.
//!
//! Here two claudes on a fixture `<proc>` name the same session and cwd;
//! the transcript is a few MB (many 256 KiB indexing windows) and grows
//! while several connections list both chats and stat their messages.
//! Every listing must be the messages `00000000-user`, `00000001-assistant`,
//! ... in order, with no gap, no duplicate, no empty name, never more than
//! have been written; at the end both list exactly every message.

mod active_fakes;
mod chat_fakes;
mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use chat_fakes::*;
use common::*;

/// The two agents, one transcript.
const PIDS: [u32; 2] = [100, 101];
/// Messages the transcript starts with, and each is this long a line: a
/// few MB, so a first index takes more than a dozen windows.
const FIRST: usize = 300;
const LINE_BYTES: usize = 12_000;
/// Appends while the readers read, each of this many messages in one write
/// (half a MB: more than one window to index).
const APPENDS: usize = 6;
const APPEND_MESSAGES: usize = 40;
/// Connections reading concurrently.
const READERS: usize = 4;
/// How long the readers may take to list both chats again after an
/// append, in a debug build on a busy machine.
const ROUND_DEADLINE: Duration = Duration::from_secs(60);

/// Message `i`'s role and record: users and assistants by turns, each
/// saying its own number, padded to `LINE_BYTES`.
fn role(i: usize) -> &'static str {
    if i.is_multiple_of(2) {
        "user"
    } else {
        "assistant"
    }
}

fn record(i: usize) -> String {
    let text = format!("message {i}");
    let line = if role(i) == "user" { claude_user(&text, i as u64) } else { claude_assistant(&text, i as u64) };
    padded(&line, LINE_BYTES)
}

fn records(from: usize, to: usize) -> Vec<u8> {
    lines(&(from..to).map(record).collect::<Vec<_>>())
}

/// A listing is whole and in order: entry `i` is message `i`, and there
/// are no more than the messages whose write had begun when it was back.
fn check_listing(entries: &[Entry], written: usize, dir: &str) {
    assert!(
        entries.len() <= written,
        "{dir} listed {} messages while {written} have been written: {:?}",
        entries.len(),
        entries.iter().rev().take(3).map(|e| e.name.as_str()).collect::<Vec<_>>()
    );
    for (i, e) in entries.iter().enumerate() {
        let want = format!("{i:08}-{}", role(i));
        assert_eq!(e.name, want, "{dir}: entry {i} of {} is {:?}, not {want:?}", entries.len(), e.name);
        assert!(e.length > 0, "{dir}/{}: listed empty", e.name);
    }
}

/// One reader: list both chats, and stat the last message of each through
/// a walk of its own, until the writer is done; then once more.
fn read_until(d: &Daemon, n: usize, written: &AtomicUsize, listed: &AtomicUsize, done: &AtomicBool) {
    let mut c = d.session(Dialect::P2000);
    let mut pids = PIDS;
    if n % 2 == 1 {
        pids.reverse();
    }
    loop {
        let last = done.load(Ordering::SeqCst);
        for pid in pids {
            let dir = chat_dir("claude", pid);
            let entries = list_chat(&mut c, &dir);
            check_listing(&entries, written.load(Ordering::SeqCst), &dir);
            if let Some(e) = entries.last() {
                walk_whole(&mut c, &format!("{dir}/{}", e.name), MSG_FID);
                let st = c.stat_ok(MSG_FID);
                c.clunk_ok(MSG_FID);
                assert_eq!((st.name.as_str(), st.length), (e.name.as_str(), e.length), "{dir}: stat and listing");
            }
            listed.fetch_add(1, Ordering::SeqCst);
        }
        if last {
            return;
        }
    }
}

#[test]
fn two_agents_on_one_transcript_list_it_whole_while_it_grows_and_is_read_concurrently() {
    let w = ChatWorld::new();
    let sid = uuid(1);
    let body = records(0, FIRST);
    let transcript = w.claude(PIDS[0], &sid, &body);
    assert_eq!(w.claude(PIDS[1], &sid, &body), transcript, "both agents resolve one transcript");
    let d = w.daemon(&[]);
    read_while_it_grows(&d, &transcript);
}

#[test]
fn two_agents_on_two_links_of_one_transcript_list_it_whole_while_it_grows_and_is_read_concurrently() {
    // Two paths, two refreshes, one index (the pool keys it by inode).
    let w = ChatWorld::new();
    let transcript = w.claude(PIDS[0], &uuid(1), &records(0, FIRST));
    let link = w.claude(PIDS[1], &uuid(2), b"");
    std::fs::remove_file(&link).unwrap();
    std::fs::hard_link(&transcript, &link).unwrap();
    let d = w.daemon(&["--allow-hard-links"]);
    read_while_it_grows(&d, &transcript);
}

/// Readers on connections of their own list both chats over and over
/// while `transcript` grows by `APPENDS` appends; then both list it whole.
fn read_while_it_grows(d: &Daemon, transcript: &std::path::Path) {
    let written = AtomicUsize::new(FIRST);
    let (listed, done) = (AtomicUsize::new(0), AtomicBool::new(false));
    std::thread::scope(|s| {
        let (written, listed, done) = (&written, &listed, &done);
        let readers: Vec<_> = (0..READERS).map(|n| s.spawn(move || read_until(d, n, written, listed, done))).collect();
        // Each append waits for every reader to have listed both chats
        // since the last, so the appends land among the readers' refreshes.
        for k in 0..APPENDS {
            let want = listed.load(Ordering::SeqCst) + READERS * PIDS.len();
            let round = poll(ROUND_DEADLINE, || {
                (listed.load(Ordering::SeqCst) >= want || readers.iter().any(|r| r.is_finished())).then_some(())
            });
            assert!(round.is_some(), "the readers listed nothing for {ROUND_DEADLINE:?}");
            if readers.iter().any(|r| r.is_finished()) {
                break;
            }
            let from = FIRST + k * APPEND_MESSAGES;
            // Counted before the write: a listing may see a message the
            // moment its line is whole, before the write returns.
            written.fetch_add(APPEND_MESSAGES, Ordering::SeqCst);
            append(transcript, &records(from, from + APPEND_MESSAGES));
        }
        done.store(true, Ordering::SeqCst);
        for r in readers {
            r.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        }
    });

    // Both agents list every message, and the last one reads as written.
    let total = FIRST + APPENDS * APPEND_MESSAGES;
    let mut c = d.session(Dialect::P2000);
    for pid in PIDS {
        let dir = chat_dir("claude", pid);
        let entries = list_chat(&mut c, &dir);
        check_listing(&entries, total, &dir);
        assert_eq!(entries.len(), total, "{dir} after every append");
        let (_, text) = read_msg(&mut c, &format!("{dir}/{:08}-{}", total - 1, role(total - 1)));
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains(&format!("message {}", total - 1)), "{dir}: the last message reads {text:?}");
    }
}
