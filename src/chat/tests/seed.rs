//! The seed's chat tests, rewritten for this code.

use super::*;
use crate::chat::Kind;

const CLAUDE: &[&str] = &[
    r#"{"type":"permission-mode","permissionMode":"default"}"#,
    r#"{"type":"user","message":{"role":"user","content":"fix the \"race\"\nplease"},"timestamp":"2026-09-24T12:51:26.691Z","isMeta":false}"#,
    r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"thinking","thinking":"","signature":"abc"}]}}"#,
    r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"caf\u00e9 \ud83d\ude00 done"}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls -la"}}],"role":"assistant"}}"#,
    r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"a\nb\n","is_error":false}]}}"#,
    r#"{"type":"attachment","attachment":{"type":"total_tokens_reminder"}}"#,
    r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"shot"},{"type":"image","source":{"data":"AAAA"}}]}]}}"#,
    r#"{"type":"user","isMeta":true,"message":{"role":"user","content":"Base directory for this skill"}}"#,
    r#"{"type":"user","isSidechain":true,"message":{"role":"user","content":"not ours"}}"#,
    r#"{"type":"system","subtype":"local_command","content":"<local-command-stdout>ok</local-command-stdout>"}"#,
    r#"{"type":"user","message":{"content":"cut short""#,
    r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"thanks"}]}}"#,
    r#"{"type":"attachment","attachment":{"type":"queued_command","prompt":"also restart it","commandMode":"prompt","origin":{"kind":"human"},"humanTurn":true}}"#,
    r#"{"type":"attachment","attachment":{"type":"queued_command","prompt":"<task-notification>done</task-notification>","commandMode":"task-notification"}}"#,
];

#[test]
fn a_claude_code_transcript_reads_as_numbered_messages() {
    let file = lines(CLAUDE);
    let mut ix = index(Format::Claude, &file);
    assert_eq!(
        names(&ix),
        "00000000-user 00000001-assistant 00000002-bash 00000003-bash-result 00000004-tool-result \
         00000005-system 00000006-system 00000007-user 00000008-user 00000009-user 00000010-system"
    );
    let want = [
        "fix the \"race\"\nplease\n",
        "café 😀 done\n",
        "Bash\n{\"command\":\"ls -la\"}\n",
        "a\nb\n",
        "shot\n[image]\n",
        "Base directory for this skill\n",
        "<local-command-stdout>ok</local-command-stdout>\n",
        // A line cut short still said what it got to say.
        "cut short\n",
        "thanks\n",
        "also restart it\n",
        "<task-notification>done</task-notification>\n",
    ];
    for (id, w) in want.iter().enumerate() {
        assert_eq!(text(&mut ix, &file, id), *w, "message {id}");
    }
    assert_reads_agree(&mut ix, &file);
}

const CODEX: &[&str] = &[
    r#"{"timestamp":"2026-09-24T12:51:26.691Z","type":"session_meta","payload":{"id":"x","cwd":"/"}}"#,
    r#"{"timestamp":"2026-09-24T12:51:27.000Z","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"be careful"}]}}"#,
    r#"{"timestamp":"2026-09-24T12:51:28.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"one"},{"type":"input_text","text":"two\n"}]}}"#,
    r#"{"timestamp":"2026-09-24T12:51:28.000Z","type":"event_msg","payload":{"type":"user_message","message":"one"}}"#,
    r#"{"timestamp":"2026-09-24T12:51:29.000Z","type":"response_item","payload":{"type":"reasoning","summary":[],"content":null,"encrypted_content":"gAAA"}}"#,
    r#"{"timestamp":"2026-09-24T12:51:29.000Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"**plan**"}]}}"#,
    r#"{"timestamp":"2026-09-24T12:51:30.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}}"#,
    r#"{"timestamp":"2026-09-24T12:51:31.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"file\n"}}"#,
    r#"{"timestamp":"2026-09-24T12:51:32.000Z","type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch","call_id":"c2"}}"#,
    r#"{"timestamp":"2026-09-24T12:51:33.000Z","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c2","output":[{"type":"input_text","text":"Done"},{"type":"input_text","text":"!"}]}}"#,
    r#"{"timestamp":"2026-09-24T12:51:34.000Z","type":"response_item","payload":{"type":"web_search_call","status":"completed","action":{"type":"search","query":"zig"}}}"#,
    r#"{"timestamp":"2026-09-24T12:51:35.000Z","type":"response_item","payload":{"type":"agent_message","author":"/root/w1","recipient":"/root","content":[{"type":"input_text","text":"hi"},{"type":"encrypted_content","encrypted_content":"gAAA"}]}}"#,
    r#"{"timestamp":"2026-09-24T12:51:36.000Z","type":"compacted","payload":{"message":"","replacement_history":[{"type":"message"}]}}"#,
    r#"{"timestamp":"2026-09-24T12:51:37.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"all done"}]}}"#,
    r#"{"timestamp":"2026-09-24T12:51:38.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/x</cwd>"}]}}"#,
    r##"{"timestamp":"2026-09-24T12:51:39.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /x"}]}}"##,
];

#[test]
fn a_codex_rollout_reads_as_numbered_messages() {
    let file = lines(CODEX);
    let mut ix = index(Format::Codex, &file);
    assert_eq!(
        names(&ix),
        "00000000-system 00000001-user 00000002-thinking 00000003-shell 00000004-shell-result \
         00000005-apply_patch 00000006-apply_patch-result 00000007-web_search 00000008-agent \
         00000009-assistant 00000010-system 00000011-system"
    );
    let want = [
        "be careful\n",
        "one\ntwo\n",
        "**plan**\n",
        "shell\n{\"command\":[\"ls\"]}\n",
        "file\n",
        "apply_patch\n*** Begin Patch\n",
        "Done\n!\n",
        "web_search_call\n{\"type\":\"search\",\"query\":\"zig\"}\n",
        "/root/w1\nhi\n",
        "all done\n",
    ];
    for (id, w) in want.iter().enumerate() {
        assert_eq!(text(&mut ix, &file, id), *w, "message {id}");
    }
    assert_eq!(ix.info(0).unwrap().time, 1_790_254_287);
    assert_reads_agree(&mut ix, &file);
}

#[test]
fn a_tool_call_is_named_after_its_tool_and_its_result_after_the_call() {
    let file = lines(&[
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"a","name":"Read","input":{}}]}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"b","name":"mcp__x__Send Mail/now","input":{}}]}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"c","name":"User","input":{}}]}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"d","name":"read","input":{}}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"b","content":"sent"}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a","content":"text"}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c","content":"?"}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"zz","content":"?"}]}}"#,
    ]);
    let mut ix = index(Format::Claude, &file);
    // Parallel calls answered out of order still find their tools; a name
    // is made safe for a file; one that would read as another kind is not
    // used, and neither is a result whose call is unknown.
    assert_eq!(
        names(&ix),
        "00000000-read 00000001-mcp__x__send-mail-now 00000002-tool-call 00000003-read \
         00000004-mcp__x__send-mail-now-result 00000005-read-result 00000006-tool-result 00000007-tool-result"
    );
    assert_eq!(ix.lookup(b"00000004-mcp__x__send-mail-now-result"), Some(4));
    for wrong in [&b"00000004-tool-result"[..], b"00000000-tool-call", b"00000000-read-result"] {
        assert_eq!(ix.lookup(wrong), None);
    }
    assert_eq!(text(&mut ix, &file, 0), "Read\n{}\n");
    assert_eq!(ix.info(2).unwrap().kind, Kind::ToolCall);
}

#[test]
fn ids_hold_as_the_transcript_grows_and_a_half_written_line_waits() {
    let mut file = lines(&[r#"{"type":"user","message":{"content":"first"}}"#]);
    file.extend_from_slice(br#"{"type":"assistant","message":{"content":[{"type":"text","text":"sec"#);
    let mut ix = index(Format::Claude, &file);
    assert_eq!(ix.len(), 1, "the second line has no newline yet");
    let covered = ix.covered() as usize;
    assert_eq!(file[covered - 1], b'\n');

    file.extend_from_slice(b"ond\"}]}}\n{\"type\":\"user\",\"message\":{\"content\":\"third\"}}\n");
    let used = ix.feed(covered as u64, &file[covered..]);
    assert_eq!(covered + used, file.len());
    assert_eq!(names(&ix), "00000000-user 00000001-assistant 00000002-user");
    assert_eq!(text(&mut ix, &file, 1), "second\n");

    // One name per message: the kind must match, the id has one spelling.
    assert_eq!(ix.lookup(b"00000001-assistant"), Some(1));
    for wrong in [
        &b"00000001-user"[..],
        b"1-assistant",
        b"000000001-assistant",
        b"+0000001-assistant",
        b"0000000x-assistant",
        b"00000003-user",
        b"1",
        b"-assistant",
        b"00000001-assistantx",
        b"00000001_assistant",
    ] {
        assert_eq!(ix.lookup(wrong), None, "{}", String::from_utf8_lossy(wrong));
    }
}

#[test]
fn a_feed_from_anywhere_but_the_covered_end_is_refused() {
    let file = lines(&[r#"{"type":"user","message":{"content":"a"}}"#, r#"{"type":"user","message":{"content":"b"}}"#]);
    let mut ix = Index::new(Format::Claude, 10);
    assert_eq!(ix.feed(1, &file[1..]), 0);
    let used = ix.feed(0, &file);
    assert_eq!(ix.feed(0, &file), 0, "bytes already covered are not indexed twice");
    assert_eq!((used, ix.len()), (file.len(), 2));
}

#[test]
fn a_transcript_rewritten_in_place_is_seen_as_another_file() {
    let first = lines(&[r#"{"type":"user","message":{"content":"first"}}"#]);
    let ix = index(Format::Claude, &first);
    let p = ix.probe();
    let at = |file: &[u8], (off, len): (u64, usize)| file[off as usize..off as usize + len].to_vec();
    // Grown, and still the same file: go on from `covered()`.
    let mut grown = first.clone();
    grown.extend_from_slice(&lines(&[r#"{"type":"user","message":{"content":"more"}}"#]));
    assert!(ix.unchanged(&at(&grown, p.head), &at(&grown, p.tail)));
    // The same inode, truncated and rewritten longer (`cp backup live`):
    // only the bytes can tell.
    let rewritten = lines(&[
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"a different start"}]}}"#,
        r#"{"type":"user","message":{"content":"then this"}}"#,
    ]);
    assert!(!ix.unchanged(&at(&rewritten, p.head), &at(&rewritten, p.tail)));
    let mut ix = ix;
    ix.reset();
    ix.feed(0, &rewritten);
    assert_eq!(names(&ix), "00000000-assistant 00000001-user");
}

#[test]
fn the_probe_keeps_the_first_and_last_bytes_covered_across_many_feeds() {
    let mut file = Vec::new();
    for i in 0..40 {
        file.extend_from_slice(format!("{{\"type\":\"user\",\"message\":{{\"content\":\"m{i}\"}}}}\n").as_bytes());
    }
    let mut ix = Index::new(Format::Claude, 100);
    let mut at = 0;
    while at < file.len() {
        let end = file[at..].iter().position(|&c| c == b'\n').map_or(file.len(), |i| at + i + 1);
        at += ix.feed(at as u64, &file[at..end]);
    }
    let p = ix.probe();
    assert_eq!((p.head, p.tail), ((0, 64), (file.len() as u64 - 64, 64)));
    assert!(ix.unchanged(&file[..64], &file[file.len() - 64..]));
    let mut touched = file.clone();
    touched[file.len() - 10] ^= 1;
    assert!(!ix.unchanged(&touched[..64], &touched[file.len() - 64..]));
}

#[test]
fn a_string_ends_at_the_quote_an_even_run_of_backslashes_leaves_bare() {
    // Runs of escaped backslashes long enough to straddle every window and
    // block edge, each ending in an escaped quote that must not close the
    // string.
    let mut file = br#"{"type":"user","message":{"content":"x"#.to_vec();
    for _ in 0..3 {
        file.extend(std::iter::repeat_n(&b"\\\\"[..], 40_000).flatten());
        file.extend_from_slice(br#"\""#);
    }
    file.extend_from_slice(b"end\"}}\n{\"type\":\"assistant\",\"message\":{\"content\":\"after\"}}\n");
    for simd in crate::chat::scan::tests::all_simd() {
        for w in [4096, 65_536, 1 << 20] {
            let mut ix = index_in_windows(Format::Claude, &file, w, simd);
            assert_eq!(names(&ix), "00000000-user 00000001-assistant", "{simd:?} {w}");
            let want = 1 + 3 * (40_000 + 1) + "end\n".len();
            assert_eq!(ix.info(0).unwrap().size, want as u64);
            let out = read(&mut ix, &file, 0, 0, want as u64);
            assert!(out.ends_with(b"\\\"end\n"));
            assert_eq!(out.iter().filter(|&&c| c == b'"').count(), 3);
            assert_eq!(text(&mut ix, &file, 1), "after\n");
        }
    }
}

#[test]
fn a_transcript_past_the_cap_says_so_instead_of_ending_early() {
    let one = r#"{"type":"user","message":{"content":"m"}}"#;
    let file = lines(&[one; 11]);
    let mut ix = Index::new(Format::Claude, 10);
    let used = ix.feed(0, &file);
    assert!(ix.full());
    assert_eq!(ix.len(), 10);
    assert_eq!(used, 10 * (one.len() + 1), "the line past the cap is left for nobody");
    assert_eq!(ix.feed(used as u64, &file[used..]), 0);
}

#[test]
fn a_line_that_would_pass_the_cap_is_undone_whole() {
    // Two blocks in one record: the second would be message 2 of a cap of
    // 2, so the whole record waits, not half of it.
    let file = lines(&[
        r#"{"type":"user","message":{"content":"a"}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"b"},{"type":"text","text":"c"}]}}"#,
    ]);
    let mut ix = Index::new(Format::Claude, 2);
    ix.feed(0, &file);
    assert!(ix.full());
    assert_eq!(names(&ix), "00000000-user");
}

#[test]
fn malformed_json_never_escapes_the_line_it_is_on() {
    let file = lines(&[
        r#"{"type":"user","message":{"content":"a"}}"#,
        r#"]]]}}}{{{["""\\""#,
        r#"{"type":"user","message":{"content":[{"type":"text","text":"b"},]}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"X","input":{"u":"\u"}}]}}"#,
        r#"{"type":"user","message":{"content":"unclosed string}}"#,
        r#"{"type":"user","message":{"content":"c"}}"#,
    ]);
    let mut ix = index(Format::Claude, &file);
    // The trailing comma ends that walk after "b"; the stray `\u` is not an
    // escape, so it is served as written; the unclosed string ends with
    // its line and says nothing.
    assert_eq!(names(&ix), "00000000-user 00000001-user 00000002-x 00000003-user");
    assert_eq!(text(&mut ix, &file, 2), "X\n{\"u\":\"\\u\"}\n");
    assert_eq!(text(&mut ix, &file, 3), "c\n");
    assert_reads_agree(&mut ix, &file);
}

#[test]
fn a_message_takes_its_records_time_or_the_last_time_before_it() {
    let file = lines(&[
        r#"{"type":"user","message":{"content":"a"},"timestamp":"2026-09-24T12:51:26.691Z"}"#,
        r#"{"type":"user","message":{"content":"b"}}"#,
        r#"{"type":"user","message":{"content":"c"},"timestamp":"1970-01-02T00:00:00Z"}"#,
        r#"{"type":"user","message":{"content":"d"},"timestamp":"yesterday"}"#,
    ]);
    let ix = index(Format::Claude, &file);
    let times: Vec<u32> = (0..4).map(|i| ix.info(i).unwrap().time).collect();
    assert_eq!(times, [1_790_254_286, 1_790_254_286, 86_400, 86_400]);
    let first = index(Format::Claude, &lines(&[r#"{"type":"user","message":{"content":"x"}}"#]));
    assert_eq!(first.info(0).unwrap().time, 0, "nothing before it had a time");
}

#[test]
fn a_thousand_messages_appended_one_by_one_are_all_listed_and_read_whole() {
    let mut file = Vec::new();
    let mut ix = Index::new(Format::Claude, MAX_MESSAGES_DEFAULT);
    for i in 1..=1000 {
        file.extend_from_slice(format!("{{\"type\":\"user\",\"message\":{{\"content\":\"m{i}\"}}}}\n").as_bytes());
        let at = ix.covered() as usize;
        assert_eq!(ix.feed(at as u64, &file[at..]), file.len() - at);
    }
    assert_eq!(ix.len(), 1000);
    let mut name = Vec::new();
    ix.name(999, &mut name);
    assert_eq!(name, b"00000999-user");
    for id in 0..ix.len() {
        assert_eq!(text(&mut ix, &file, id), format!("m{}\n", id + 1));
    }
}
