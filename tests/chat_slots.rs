//! Busy chat slots are a wait, never a refusal (issue 21, defect 2). With
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
            Ok(bytes) => assert_eq!(bytes, usage, "{sid}: the usage"),
            Err(e) => refused.push(format!("{sid}: {e}")),
        }
    }
    assert!(refused.is_empty(), "{} of {READERS} readers refused:\n{}", refused.len(), refused.join("\n"));
}
