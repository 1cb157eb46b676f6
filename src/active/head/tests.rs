use super::*;

fn lines(records: &[&str]) -> Vec<u8> {
    records.iter().flat_map(|r| r.bytes().chain([b'\n'])).collect()
}

#[test]
fn a_window_that_starts_mid_file_drops_its_cut_first_record() {
    let w = b"xt\":\"cut\"}\n{\"a\":1}\n\n{\"b\":2";
    assert_eq!(records(w, false).collect::<Vec<_>>(), [&b"{\"a\":1}"[..], b"{\"b\":2"]);
    assert_eq!(records(w, true).count(), 3);
    assert_eq!(records(b"no newline at all", false).count(), 0);
    assert_eq!(records(b"", true).count(), 0);
}

#[test]
fn claude_prefers_custom_title_over_ai_title_over_summary() {
    let t = lines(&[
        r#"{"type":"summary","summary":"Old summary","leafUuid":"x"}"#,
        r#"{"type":"user","cwd":"/home/u/p","message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"ai-title","aiTitle":"First ai title","sessionId":"s"}"#,
        r#"{"type":"custom-title","customTitle":"Mine","sessionId":"s"}"#,
        r#"{"type":"ai-title","aiTitle":"Later ai title","sessionId":"s"}"#,
    ]);
    let head = read_head(Harness::Claude, &t, None).unwrap();
    assert_eq!(head.title.as_deref(), Some(&b"Mine"[..]));
    let t = lines(&[
        r#"{"type":"ai-title","aiTitle":"A"}"#,
        r#"{"type":"ai-title","aiTitle":"B"}"#,
        r#"{"type":"summary","summary":"S"}"#,
    ]);
    assert_eq!(read_head(Harness::Claude, &t, None).unwrap().title.as_deref(), Some(&b"B"[..]));
    let t = lines(&[r#"{"type":"summary","summary":"S"}"#]);
    assert_eq!(read_head(Harness::Claude, &t, None).unwrap().title.as_deref(), Some(&b"S"[..]));
}

#[test]
fn claude_model_is_the_latest_real_assistant_model() {
    let t = lines(&[
        r#"{"type":"assistant","cwd":"/p","message":{"model":"claude-opus-4-8","role":"assistant"}}"#,
        r#"{"type":"assistant","isSidechain":true,"cwd":"/elsewhere","message":{"model":"claude-haiku-4-5"}}"#,
        r#"{"type":"assistant","message":{"model":"<synthetic>"}}"#,
    ]);
    let head = read_head(Harness::Claude, &t, None).unwrap();
    assert_eq!(head.model.as_deref(), Some(&b"claude-opus-4-8"[..]));
    assert_eq!(head.cwd.as_deref(), Some(&b"/p"[..]));
}

#[test]
fn claude_titles_written_late_are_found_in_the_tail() {
    let head = lines(&[r#"{"type":"user","cwd":"/p","message":{}}"#, r#"{"type":"ai-title","aiTitle":"Early"}"#]);
    let tail = [
        &b"...cut\"}\n"[..],
        &lines(&[
            r#"{"type":"custom-title","customTitle":"Renamed"}"#,
            r#"{"type":"agent-name","agentName":"phase3"}"#,
        ]),
    ]
    .concat();
    let h = read_head(Harness::Claude, &head, Some(&tail)).unwrap();
    assert_eq!(
        (h.title.as_deref(), h.name.as_deref(), h.cwd.as_deref()),
        (Some(&b"Renamed"[..]), Some(&b"phase3"[..]), Some(&b"/p"[..]))
    );
}

#[test]
fn a_tail_cut_inside_a_nested_object_is_not_read_as_a_record() {
    let tail = b"{\"type\":\"custom-title\",\"customTitle\":\"forged\"}\"}]}}\n";
    let h = read_head(Harness::Claude, b"", Some(tail)).unwrap();
    assert_eq!(h.title, None);
}

#[test]
fn codex_reads_cwd_from_session_meta_and_model_from_turn_context() {
    let t = lines(&[
        r#"{"timestamp":"t","type":"session_meta","payload":{"id":"019c","cwd":"/home/u/w","thread_source":"user"}}"#,
        r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#,
        r#"{"timestamp":"t","type":"turn_context","payload":{"cwd":"/home/u/w","model":"gpt-5.5"}}"#,
        r#"{"timestamp":"t","type":"event_msg","payload":{"type":"thread_name_updated","thread_id":"019c","thread_name":"Fix CI"}}"#,
        r#"{"timestamp":"t","type":"event_msg","payload":{"type":"thread_settings_applied","thread_settings":{"model":"gpt-5.6-sol"}}}"#,
    ]);
    let h = read_head(Harness::Codex, &t, None).unwrap();
    assert_eq!(h.cwd.as_deref(), Some(&b"/home/u/w"[..]));
    assert_eq!(h.model.as_deref(), Some(&b"gpt-5.6-sol"[..]));
    assert_eq!(h.title.as_deref(), Some(&b"Fix CI"[..]));
}

#[test]
fn a_huge_first_record_cut_by_the_head_window_still_gives_its_cwd() {
    let first = format!(
        r#"{{"type":"session_meta","payload":{{"id":"a","cwd":"/w","base_instructions":{{"text":"{}"}}}}}}"#,
        "x".repeat(200_000)
    );
    let head = &first.as_bytes()[..crate::active::HEAD_BYTES_MAX];
    assert_eq!(read_head(Harness::Codex, head, None).unwrap().cwd.as_deref(), Some(&b"/w"[..]));
}

#[test]
fn omp_title_slot_wins_then_title_change_then_header() {
    let t = lines(&[
        r#"{"type":"title","v":1,"title":"Slot title","source":"user","updatedAt":"t","pad":"    "}"#,
        r#"{"type":"session","version":3,"id":"01a2","timestamp":"t","cwd":"/home/u/src/x","title":"Header title"}"#,
        r#"{"type":"title_change","id":"1","parentId":null,"timestamp":"t","title":"Changed","source":"auto"}"#,
    ]);
    assert_eq!(read_head(Harness::Omp, &t, None).unwrap().title.as_deref(), Some(&b"Slot title"[..]));
    let h = read_head(Harness::Omp, &t[t.iter().position(|&b| b == b'\n').unwrap() + 1..], None).unwrap();
    assert_eq!(h.title.as_deref(), Some(&b"Changed"[..]));
    assert_eq!(h.cwd.as_deref(), Some(&b"/home/u/src/x"[..]));
    let header_only = lines(&[r#"{"type":"session","id":"a","cwd":"/x","title":"Header title"}"#]);
    assert_eq!(read_head(Harness::Omp, &header_only, None).unwrap().title.as_deref(), Some(&b"Header title"[..]));
}

#[test]
fn a_title_record_past_the_first_line_is_not_omps_slot() {
    let t = lines(&[r#"{"type":"session","id":"a","cwd":"/x"}"#, r#"{"type":"title","title":"not a slot"}"#]);
    assert_eq!(read_head(Harness::Omp, &t, None).unwrap().title, None);
}

#[test]
fn omp_model_is_the_latest_default_model_as_a_bare_id() {
    let t = lines(&[
        r#"{"type":"session","id":"a","cwd":"/x"}"#,
        r#"{"type":"model_change","id":"1","model":"anthropic/claude-sonnet-4-6"}"#,
        r#"{"type":"model_change","id":"2","model":"openai/gpt-mini","role":"smol"}"#,
    ]);
    assert_eq!(read_head(Harness::Omp, &t, None).unwrap().model.as_deref(), Some(&b"claude-sonnet-4-6"[..]));
    let t = [
        t,
        lines(&[
            r#"{"type":"message","message":{"role":"assistant","model":"claude-opus-4-8","provider":"anthropic"}}"#,
        ]),
    ]
    .concat();
    assert_eq!(read_head(Harness::Omp, &t, None).unwrap().model.as_deref(), Some(&b"claude-opus-4-8"[..]));
}

#[test]
fn a_dsh_head_read_decoded_says_its_cwd_and_hermes_has_none() {
    let t = lines(&[
        r#"{"type":"session","version":0,"id":"d","createdAt":1795886444051,"cwd":"/home/demo/src/webshop"}"#,
        r#"{"type":"message","seq":2,"time":1795886444952,"role":"user","text":"hi"}"#,
    ]);
    let h = read_head(Harness::Dsh, &t, None).unwrap();
    assert_eq!((h.cwd.as_deref(), h.title, h.model), (Some(&b"/home/demo/src/webshop"[..]), None, None));
    assert_eq!(read_head(Harness::Hermes, b"", None), None);
}

#[test]
fn a_cwd_from_a_record_must_be_an_absolute_path() {
    for cwd in [r#""relative""#, r#""""#, r#""/a\u0000b""#, "7"] {
        let t = lines(&[&format!(r#"{{"type":"session","id":"a","cwd":{cwd}}}"#)]);
        assert_eq!(read_head(Harness::Omp, &t, None).unwrap().cwd, None, "{cwd}");
    }
}

#[test]
fn a_title_longer_than_the_cap_is_cut() {
    let t = lines(&[&format!(r#"{{"type":"custom-title","customTitle":"{}"}}"#, "t".repeat(5000))]);
    assert_eq!(read_head(Harness::Claude, &t, None).unwrap().title.unwrap().len(), TITLE_BYTES_MAX);
}

#[test]
fn the_cwd_check_believes_everything_but_a_mismatch() {
    assert_eq!(check_cwd(Some(b"/home/u/p"), Some(b"/home/u/p")), CwdCheck::Match);
    assert_eq!(check_cwd(Some(b"/home/u/p/"), Some(b"/home/u/p")), CwdCheck::Match);
    assert_eq!(check_cwd(Some(b"/home/u/p"), Some(b"/home/u/q")), CwdCheck::Mismatch);
    assert_eq!(check_cwd(Some(b"/home/u/p"), Some(b"/home/u/p (deleted)")), CwdCheck::Mismatch);
    assert_eq!(check_cwd(Some(b"/"), Some(b"/")), CwdCheck::Match);
    assert_eq!(check_cwd(None, Some(b"/x")), CwdCheck::Unrecorded);
    assert_eq!(check_cwd(Some(b"/x"), None), CwdCheck::ProcessUnknown);
    assert!(!CwdCheck::Mismatch.believed());
    for c in [CwdCheck::Match, CwdCheck::Unrecorded, CwdCheck::ProcessUnknown] {
        assert!(c.believed());
    }
}

#[test]
fn a_transcript_whose_cwd_differs_is_another_sessions() {
    let t = lines(&[r#"{"type":"session","id":"a","cwd":"/home/u/other"}"#]);
    let h = read_head(Harness::Omp, &t, None).unwrap();
    assert!(!check_cwd(h.cwd.as_deref(), Some(b"/home/u/src")).believed());
}

fn file(rel: &str) -> Option<Vec<u8>> {
    let path = format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).ok();
    if bytes.is_none() {
        eprintln!("skipped: no {path}");
    }
    bytes
}

/// Read a real file the way the server does: its head, and its tail when
/// the file is longer than the head.
fn read_like_server(harness: Harness, bytes: &[u8]) -> Head {
    let head = &bytes[..bytes.len().min(crate::active::HEAD_BYTES_MAX)];
    let tail = (bytes.len() > head.len()).then(|| &bytes[bytes.len().saturating_sub(crate::active::TAIL_BYTES_MAX)..]);
    read_head(harness, head, tail).unwrap()
}

#[test]
fn the_demo_transcripts_give_their_title_model_and_cwd() {
    if let Some(b) = file("demo/home/.omp/agent/sessions/-src-9agents/2026-11-28T14-05-31-207Z_01a22279-b4c7-7a46-a6f6-3babbe5064c9.jsonl") {
        let h = read_like_server(Harness::Omp, &b);
        assert_eq!(h.cwd.as_deref(), Some(&b"/home/demo/src/9agents"[..]));
        assert_eq!(h.model.as_deref(), Some(&b"claude-sonnet-4-6"[..]));
    }
    if let Some(b) = file(
        "demo/home/.codex/sessions/2026/11/28/rollout-2026-11-28T10-00-00-01a22198-ee9c-7596-a53d-e97bb5581911.jsonl",
    ) {
        let h = read_like_server(Harness::Codex, &b);
        assert_eq!(h.cwd.as_deref(), Some(&b"/home/demo/src/9agents"[..]));
        assert!(h.model.is_some());
    }
}

#[test]
fn real_claude_transcripts_give_the_title_the_harness_shows() {
    let dir = "../shared/data/transcripts/claude";
    let cases = [
        ("cc-2.1.143__custom-title__LeoDChen.jsonl", "对话3-01", true),
        ("cc-2.1.117__image__LeoDChen.jsonl", "CC+OB+HM", true),
        ("cc-2.0.71__summary-file-history__HillviewCap.jsonl", "Fixed PAI_DIR placeholder startup hook errors", false),
        ("cc-2.1.126__small__chloebrett.jsonl", "Set up dotfiles configuration", true),
    ];
    for (name, title, has_model) in cases {
        let Some(b) = file(&format!("{dir}/{name}")) else { continue };
        let h = read_like_server(Harness::Claude, &b);
        assert_eq!(h.title.as_deref(), Some(title.as_bytes()), "{name}");
        assert_eq!(h.model.is_some(), has_model, "{name}: only local commands, no assistant record");
    }
}

#[test]
fn real_codex_rollouts_give_cwd_and_model_from_the_head() {
    let dir = "../shared/data/transcripts/codex";
    let cases = [
        ("cx-0.116.0__dimicheck.jsonl", "/Users/hjun1052/Documents/Codes/NormalProjects/dimicheck4", "gpt-5.4"),
        (
            "cx-0.146.0__world-state-thread-source__motion-jepa.jsonl",
            "/source/seokhyeon/motion-jepa/motion-jepa",
            "gpt-5.6-sol",
        ),
        ("cx-0.44.0__Arnaud.jsonl", "/home/arnaud/.codex", "gpt-5-codex"),
    ];
    for (name, cwd, model) in cases {
        let Some(b) = file(&format!("{dir}/{name}")) else { continue };
        let h = read_like_server(Harness::Codex, &b);
        assert_eq!(h.cwd.as_deref(), Some(cwd.as_bytes()), "{name}");
        assert_eq!(h.model.as_deref(), Some(model.as_bytes()), "{name}");
    }
}

#[test]
fn every_real_transcript_reads_without_panic_under_every_harness() {
    for sub in ["claude", "codex", "other"] {
        let dir = format!("{}/../shared/data/transcripts/{sub}", env!("CARGO_MANIFEST_DIR"));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!("skipped: no {dir}");
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let Ok(bytes) = std::fs::read(entry.path()) else { continue };
            for h in [Harness::Claude, Harness::Codex, Harness::Omp] {
                let head = read_like_server(h, &bytes);
                let _ = check_cwd(head.cwd.as_deref(), Some(b"/"));
            }
        }
    }
}

/// Item 4 of "Today's harnesses": a subagent's own transcript is all
/// sidechain, and its records say its model.
#[test]
fn a_claude_subagents_own_file_says_its_model() {
    let t = lines(&[
        r#"{"type":"user","isSidechain":true,"agentId":"a1","cwd":"/p","message":{"role":"user","content":"task"}}"#,
        r#"{"type":"assistant","isSidechain":true,"agentId":"a1","message":{"model":"claude-haiku-4-5","role":"assistant"}}"#,
    ]);
    assert_eq!(read_head(Harness::Claude, &t, None).unwrap().model, None, "as a main session: none of its own");
    let h = read_head_of(Harness::Claude, true, &t, None).unwrap();
    assert_eq!((h.model.as_deref(), h.cwd.as_deref()), (Some(&b"claude-haiku-4-5"[..]), Some(&b"/p"[..])));
}

/// Claude Code 2.1.33x writes `relocated` when a session moves to another
/// directory: that is its cwd (and where `resume` runs) from then on.
#[test]
fn a_relocated_claude_session_is_where_it_moved() {
    let head = lines(&[r#"{"type":"user","cwd":"/home/u/old","message":{"role":"user","content":"hi"}}"#]);
    let tail = [
        &b"cut\"}\n"[..],
        &lines(&[
            r#"{"type":"relocated","relocatedCwd":"/home/u/new","sessionId":"s"}"#,
            r#"{"type":"user","cwd":"/home/u/new/sub","message":{"role":"user","content":"go on"}}"#,
        ]),
    ]
    .concat();
    let h = read_head(Harness::Claude, &head, Some(&tail)).unwrap();
    assert_eq!(h.cwd.as_deref(), Some(&b"/home/u/new"[..]));
    let bad = lines(&[r#"{"type":"relocated","relocatedCwd":"relative/dir"}"#, r#"{"type":"user","cwd":"/p"}"#]);
    assert_eq!(read_head(Harness::Claude, &bad, None).unwrap().cwd.as_deref(), Some(&b"/p"[..]), "only a path");
}

/// pi's `/name` writes a `session_info` entry: the session's title.
#[test]
fn a_pi_sessions_name_is_its_title() {
    let t = lines(&[
        r#"{"type":"session","version":3,"id":"s","cwd":"/x"}"#,
        r#"{"type":"session_info","id":"a","parentId":null,"name":"First name"}"#,
        r#"{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"session_info","id":"c","parentId":"b","name":"Refactor the parser"}"#,
    ]);
    assert_eq!(read_head(Harness::Pi, &t, None).unwrap().title.as_deref(), Some(&b"Refactor the parser"[..]));
}
