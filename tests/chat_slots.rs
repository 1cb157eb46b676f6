//! Busy chat slots are a wait, never a refusal (issue 21, defect 2), and a
//! second pass over every session's `usage` reads digests, not indexes
//! (defect 3). With
//! `--max-chats 8`, more transcripts than that being indexed at once used
//! to answer the next reader `Resource temporarily unavailable`; any
//! client that reads in parallel (ripgrep over a kernel mount runs a thread
//! per CPU) met it. Now a refresh that finds every slot taken queues for
//! one, in order, and only a queue past its cap is an error.

mod active_fakes;
mod chat_fakes;
mod common;

use std::sync::{Arc, Barrier};

use chat_fakes::*;
use common::*;

/// Readers, each of its own session, each on its own connection.
const READERS: u32 = 64;

/// A transcript long enough that its index takes more than one turn of
/// the loop (a few windows of `CHAT_WINDOW_BYTES`), so the refreshes of
/// parallel readers overlap.
fn transcript(n: u32) -> Vec<u8> {
    let mut recs = vec![claude_user(&format!("session {n}"), 1)];
    for i in 0..120u64 {
        let text = format!("reply {i} of session {n}: {}", "x".repeat(8 << 10));
        recs.push(format!(
            r#"{{"type":"assistant","sessionId":"s","uuid":"{}","timestamp":"{}","message":{{"id":"msg_{n}_{i}","model":"claude-x","role":"assistant","content":[{{"type":"text","text":"{text}"}}],"usage":{{"input_tokens":{i},"output_tokens":{n},"cache_creation_input_tokens":1,"cache_read_input_tokens":2}}}}}}"#,
            record_uuid(),
            ts(i + 2)
        ));
    }
    lines(&recs)
}

#[test]
fn sixty_four_parallel_readers_of_sixty_four_sessions_usage_with_eight_slots_are_all_answered() {
    let w = ChatWorld::new();
    let mut want = Vec::new();
    for n in 0..READERS {
        let body = transcript(n);
        let mut ix = nineagents::chat::Index::new(nineagents::chat::Format::Claude, 1 << 20);
        ix.feed(0, &body);
        want.push((uuid(100 + n), ix.usage().render()));
        w.claude(100 + n, &uuid(100 + n), &body);
    }
    let d = Arc::new(w.daemon(&["--max-chats", "8"]));
    let start = Arc::new(Barrier::new(READERS as usize));
    let readers: Vec<_> = want
        .into_iter()
        .map(|(sid, usage)| {
            let (d, start) = (d.clone(), start.clone());
            std::thread::spawn(move || {
                let mut c = d.session(Dialect::P2000);
                start.wait();
                let got = c.try_cat(&format!("/sessions/claude/{sid}/usage"), 1);
                (sid, got, usage)
            })
        })
        .collect();
    let mut refused = Vec::new();
    for r in readers {
        let (sid, got, usage) = r.join().unwrap();
        match got {
            Ok(bytes) => assert_eq!(usage_totals(&bytes), usage, "{sid}: the usage"),
            Err(e) => refused.push(format!("{sid}: {e}")),
        }
    }
    assert!(refused.is_empty(), "{} of {READERS} readers refused:\n{}", refused.len(), refused.join("\n"));
}

/// Issue 21, defect 3: with every index's entry reused since, a `usage`
/// read again of a transcript unchanged since it was indexed is its
/// digest's (a look at the file, no index); one that grew, or was
/// rewritten in place, is indexed again and counts what it says now.
#[test]
fn a_usage_read_again_is_the_digests_while_the_file_is_as_indexed_and_an_index_once_it_changed() {
    let w = ChatWorld::new();
    let (a, b) = (uuid(1), uuid(2));
    let path = w.claude(1, &a, &transcript(1));
    w.claude(2, &b, &transcript(2));
    let d = w.daemon(&["--max-chats", "1", "-v", "-v"]);
    let mut c = d.session(Dialect::P2000);
    let usage = |c: &mut Conn, sid: &str| c.cat(&format!("/sessions/claude/{sid}/usage"), 1);
    let first = usage(&mut c, &a);
    usage(&mut c, &b); // a's entry is b's now
    let digest_reads = || d.stderr().matches(": its digest").count();
    let before = digest_reads();
    assert_eq!(usage(&mut c, &a), first, "read again, unchanged");
    assert!(digest_reads() > before, "the second read was not the digest's:\n{}", d.stderr());

    // Grown: indexed again, and the new reply counted.
    let grown = r#"{"type":"assistant","sessionId":"s","uuid":"grown-1","timestamp":"2026-01-01T00:00:00.000Z","message":{"id":"msg_grown","model":"claude-x","role":"assistant","content":[],"usage":{"input_tokens":1000000,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}"#;
    append(&path, &lines(&[grown.to_string()]));
    usage(&mut c, &b);
    let after = usage(&mut c, &a);
    let input = |u: &[u8]| String::from_utf8_lossy(u).lines().next().unwrap().to_string();
    let (was, now): (u64, u64) = (
        input(&first).trim_start_matches("input ").parse().unwrap(),
        input(&after).trim_start_matches("input ").parse().unwrap(),
    );
    assert_eq!(now, was + 1_000_000, "the grown file's usage");

    // Rewritten in place at the same size and, as within the clock's tick,
    // the same mtime: only the ends of what was indexed, read afresh as a
    // live index's are, tell. An index a moment old will do for a usage
    // (CHAT_FRESH_FOR), so the new count comes once that moment is past;
    // b's chat listed each time takes the one index, so a's usage is its
    // digest's or an index anew.
    rewrite_last_cache_read(&path, b'0', b'7');
    let want = cache_read(&after) + 7;
    let got = poll(std::time::Duration::from_secs(10), || {
        chat_names(&mut c, &format!("/sessions/claude/{b}/chat"));
        Some(usage(&mut c, &a)).filter(|u| cache_read(u) == want)
    });
    assert!(got.is_some(), "the rewritten file's usage never counted its new bytes:\n{}", d.stderr());
}

/// Whether `path` last changed long enough ago (the daemon's
/// `SETTLED_NS`, 50 ms, with room) that its times alone say when it
/// changes again.
fn settled(path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).unwrap();
    let changed = (m.mtime() * 1_000_000_000 + m.mtime_nsec()).max(m.ctime() * 1_000_000_000 + m.ctime_nsec());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64;
    changed + 100_000_000 <= now
}

#[test]
fn a_file_indexed_after_it_settled_is_counted_again_from_a_look_until_it_changes() {
    let w = ChatWorld::new();
    let (a, b) = (uuid(1), uuid(2));
    let path = w.claude(1, &a, &transcript(1));
    let other = w.claude(2, &b, &transcript(2));
    let waited = poll(std::time::Duration::from_secs(10), || Some(()).filter(|()| settled(&path) && settled(&other)));
    assert!(waited.is_some(), "the files never settled");
    let d = w.daemon(&["--max-chats", "1", "-v", "-v"]);
    let mut c = d.session(Dialect::P2000);
    let usage = |c: &mut Conn, sid: &str| c.cat(&format!("/sessions/claude/{sid}/usage"), 1);
    let first = usage(&mut c, &a);
    usage(&mut c, &b);
    let looks = || d.stderr().matches(": its digest (a look)").count();
    assert_eq!(looks(), 0, "nothing was indexed before:\n{}", d.stderr());
    // Once the index no longer counts as fresh for a usage
    // (CHAT_FRESH_FOR), a read again is a look at the file.
    let looked = poll(std::time::Duration::from_secs(10), || {
        assert_eq!(usage(&mut c, &a), first, "read again, unchanged");
        Some(()).filter(|()| looks() > 0)
    });
    assert!(looked.is_some(), "a read again was never a look at a's settled file:\n{}", d.stderr());
    let before = looks();

    // Touched back to its old mtime after a change: the ctime still moved,
    // and it is indexed again.
    rewrite_last_cache_read(&path, b'2', b'9');
    let want = cache_read(&first) + 7;
    let got = poll(std::time::Duration::from_secs(10), || {
        let now = cache_read(&usage(&mut c, &a));
        assert!(now == want || looks() == before, "a look counted the changed file:\n{}", d.stderr());
        Some(()).filter(|()| now == want)
    });
    assert!(got.is_some(), "the rewritten file's usage never counted its new bytes:\n{}", d.stderr());
}

/// The transcript's last record's `cache_read_input_tokens`, one digit
/// `from`, rewritten in place as `to`, and its mtime set back to what it
/// was: the same size and mtime, other bytes (and a later ctime).
fn rewrite_last_cache_read(path: &std::path::Path, from: u8, to: u8) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    let mtime = file.metadata().unwrap().modified().unwrap();
    let mut body = std::fs::read(path).unwrap();
    let digit = body.len() - b"}}}".len() - 1 - 1;
    assert_eq!(body[digit], from, "the last record ends in cache_read_input_tokens {}", from as char);
    body[digit] = to;
    std::fs::write(path, &body).unwrap();
    file.set_modified(mtime).unwrap();
}

/// The `cache_read` line of a `usage`.
fn cache_read(usage: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(usage).to_string();
    text.lines().find_map(|l| l.strip_prefix("cache_read ")).unwrap().parse().unwrap()
}
