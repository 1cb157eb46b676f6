//! One test per row of docs/CHAT.md: what each record type the real
//! transcripts hold becomes. The lines are written for the tests in the
//! shapes the real files have (see ../shared/data/transcripts/SOURCES.md).

use super::*;

/// The names and texts `file` reads as.
fn said(format: Format, ls: &[&str]) -> Vec<(String, String)> {
    let file = lines(ls);
    let mut ix = index(format, &file);
    assert_reads_agree(&mut ix, &file);
    (0..ix.len())
        .map(|id| {
            let mut n = Vec::new();
            ix.name(id, &mut n);
            let name = String::from_utf8(n[9..].to_vec()).unwrap();
            (name, text(&mut ix, &file, id))
        })
        .collect()
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn claude_bookkeeping_records_are_not_messages() {
    let got = said(
        Format::Claude,
        &[
            r#"{"type":"summary","summary":"Empty Repo Setup","leafUuid":"u1"}"#,
            r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{"trackedFileBackups":{}},"isSnapshotUpdate":false}"#,
            r#"{"type":"progress","data":{"type":"bash_progress","output":"partial","fullOutput":"partial"},"timestamp":"2026-01-18T08:09:00.000Z"}"#,
            r#"{"type":"progress","data":{"type":"agent_progress","message":{"type":"user","message":{"content":"sub"}}}}"#,
            r#"{"type":"ai-title","aiTitle":"A title","sessionId":"s"}"#,
            r#"{"type":"custom-title","customTitle":"Mine","sessionId":"s"}"#,
            r#"{"type":"agent-name","agentName":"keys","sessionId":"s"}"#,
            r#"{"type":"last-prompt","lastPrompt":"copy of a prompt","sessionId":"s"}"#,
            r#"{"type":"mode","mode":"normal","sessionId":"s"}"#,
            r#"{"type":"permission-mode","permissionMode":"default","sessionId":"s"}"#,
            r#"{"type":"pr-link","prNumber":1,"prUrl":"https://example.com/pr/1"}"#,
            r#"{"type":"system","subtype":"api_error","level":"error","error":{"status":429},"retryAttempt":1}"#,
            r#"{"type":"system","subtype":"turn_duration","durationMs":9417,"messageCount":5}"#,
            r#"{"type":"system","subtype":"stop_hook_summary","hookCount":1,"hookInfos":[{"command":"x"}]}"#,
            r#"{"type":"attachment","attachment":{"type":"skill_listing","content":"- a skill"}}"#,
            r#"{"type":"attachment","attachment":{"type":"todo_reminder","content":[{"content":"todo","status":"pending"}]}}"#,
            r#"{"type":"attachment","attachment":{"type":"nested_memory","path":"/CLAUDE.md","content":{"content":"@AGENTS.md\n"}}}"#,
            r#"{"type":"attachment","attachment":{"type":"edited_text_file","filename":"/a.md","snippet":"1\tline"}}"#,
            r#"{"type":"attachment","attachment":{"type":"hook_success","hookName":"SessionStart","content":"","stdout":"{}"}}"#,
            r#"{"type":"attachment","attachment":{"type":"date_change","newDate":"2026-05-11"}}"#,
            r#"{"type":"queue-operation","operation":"dequeue","timestamp":"2025-11-10T12:27:57.808Z"}"#,
        ],
    );
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn claude_system_records_that_carry_text_are_the_harness_speaking() {
    let got = said(
        Format::Claude,
        &[
            r#"{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"auto"}}"#,
            r#"{"type":"system","subtype":"microcompact_boundary","content":"Context microcompacted"}"#,
            r#"{"type":"system","subtype":"away_summary","content":"You asked to upgrade."}"#,
            r#"{"type":"system","subtype":"informational","content":"Auto mode lets Claude..."}"#,
            r#"{"type":"system","subtype":"bridge_status","content":"/remote-control is active.","url":"https://example.com"}"#,
            r#"{"type":"user","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued"}}"#,
        ],
    );
    let want = [
        ("system", "Conversation compacted\n"),
        ("system", "Context microcompacted\n"),
        ("system", "You asked to upgrade.\n"),
        ("system", "Auto mode lets Claude...\n"),
        ("system", "/remote-control is active.\n"),
        ("system", "This session is being continued\n"),
    ];
    assert_eq!(got, pairs(&want));
}

#[test]
fn claude_hooks_speak_through_two_attachments() {
    let got = said(
        Format::Claude,
        &[
            r##"{"type":"attachment","attachment":{"type":"hook_system_message","content":"# status\n\nno memory yet"}}"##,
            r#"{"type":"attachment","attachment":{"type":"hook_additional_context","content":["first context","second"]}}"#,
        ],
    );
    assert_eq!(got, pairs(&[("system", "# status\n\nno memory yet\n"), ("system", "first context\nsecond\n")]));
}

#[test]
fn claude_documents_images_and_unknown_blocks_are_shown_not_dropped() {
    let got = said(
        Format::Claude,
        &[
            r#"{"type":"user","message":{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"{\n  \"a\": 1\n}"},"title":"a.json"}]}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="},"title":"a.pdf"}]}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"iVBO"}},{"type":"text","text":"what is this?"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"redacted_thinking","data":"EvEW"},{"type":"server_tool_use","id":"s1","name":"web_search","input":{"query":"q"}},{"type":"web_search_tool_result","tool_use_id":"s1","content":[{"type":"web_search_result","url":"u"}]},{"type":"new_block","x":1}]}}"#,
        ],
    );
    let want = [
        ("user", "a.json\n{\n  \"a\": 1\n}\n"),
        ("user", "a.pdf\n[document]\n"),
        ("user", "[image]\n"),
        ("user", "what is this?\n"),
        ("web_search", "web_search\n{\"query\":\"q\"}\n"),
        ("web_search-result", "{\"type\":\"web_search_result\",\"url\":\"u\"}\n"),
        ("assistant", "{\"type\":\"new_block\",\"x\":1}\n"),
    ];
    assert_eq!(got, pairs(&want));
}

#[test]
fn claude_tool_results_show_their_images_and_references() {
    let got = said(
        Format::Claude,
        &[
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"r1","name":"Read","input":{"file_path":"/a.png"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"tool_use_id":"r1","type":"tool_result","content":[{"type":"image","source":{"type":"base64","data":"iVBO"}},{"type":"text","text":"caption"}]}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"r2","content":[{"type":"tool_reference","tool_name":"WebFetch"}]}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"r3"}]}}"#,
        ],
    );
    let want = [
        ("read", "Read\n{\"file_path\":\"/a.png\"}\n"),
        ("read-result", "[image]\ncaption\n"),
        ("tool-result", "{\"type\":\"tool_reference\",\"tool_name\":\"WebFetch\"}\n"),
        ("tool-result", ""),
    ];
    assert_eq!(got, pairs(&want));
}

#[test]
fn claude_thinking_is_shown_unless_redacted_to_nothing() {
    let got = said(
        Format::Claude,
        &[
            r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"","signature":"abc"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"let me see","signature":"abc"}]}}"#,
        ],
    );
    assert_eq!(got, pairs(&[("thinking", "let me see\n")]));
}

#[test]
fn a_main_chat_skips_sidechain_records_that_come_first() {
    // A subagent's records ahead of the main thread's first one: the chat
    // is still the main thread, whatever spoke first.
    let got = said(
        Format::Claude,
        &[
            r#"{"type":"user","isSidechain":true,"agentId":"a1","message":{"content":"task"}}"#,
            r#"{"type":"assistant","isSidechain":true,"agentId":"a1","message":{"content":[{"type":"text","text":"done"}]}}"#,
            r#"{"type":"system","isSidechain":true,"content":"sub system"}"#,
            r#"{"type":"user","isSidechain":false,"message":{"content":"main"}}"#,
            r#"{"type":"assistant","isSidechain":false,"message":{"content":[{"type":"text","text":"main says"}]}}"#,
        ],
    );
    assert_eq!(got, pairs(&[("user", "main\n"), ("assistant", "main says\n")]));
}

#[test]
fn a_subagents_own_file_is_all_sidechain_and_its_records_are_its_chat() {
    // `<sid>/subagents/agent-*.jsonl` (and the pre-2.1 sibling files):
    // read as a main chat it would be empty.
    let file = [
        r#"{"type":"user","isSidechain":true,"agentId":"a1","message":{"content":"task"}}"#,
        r#"{"type":"assistant","isSidechain":true,"agentId":"a1","message":{"content":[{"type":"text","text":"done"}]}}"#,
    ];
    assert_eq!(said(Format::Claude, &file), pairs(&[]));
    assert_eq!(said(Format::ClaudeAgent, &file), pairs(&[("user", "task\n"), ("assistant", "done\n")]));
}

#[test]
fn a_main_chat_skips_sidechain_records_interleaved_with_its_own() {
    let got = said(
        Format::Claude,
        &[
            r#"{"type":"user","isSidechain":false,"message":{"content":"main"}}"#,
            r#"{"type":"assistant","isSidechain":true,"message":{"content":[{"type":"text","text":"sub says"}]}}"#,
            r#"{"type":"attachment","isSidechain":true,"attachment":{"type":"hook_system_message","content":"sub hook"}}"#,
            r#"{"type":"assistant","isSidechain":false,"message":{"content":[{"type":"text","text":"main says"}]}}"#,
            r#"{"type":"user","isSidechain":true,"message":{"content":"sub task"}}"#,
            r#"{"type":"system","content":"main system"}"#,
        ],
    );
    let want = [("user", "main\n"), ("assistant", "main says\n"), ("system", "main system\n")];
    assert_eq!(got, pairs(&want));
}

#[test]
fn a_main_chat_without_sidechains_says_every_record() {
    // `isSidechain` false, or absent (records that never carry it).
    let got = said(
        Format::Claude,
        &[
            r#"{"type":"user","isSidechain":false,"message":{"content":"one"}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"two"}]}}"#,
            r#"{"type":"system","isSidechain":false,"content":"three"}"#,
            r#"{"type":"user","message":{"content":"four"}}"#,
        ],
    );
    let want = [("user", "one\n"), ("assistant", "two\n"), ("system", "three\n"), ("user", "four\n")];
    assert_eq!(got, pairs(&want));
}

#[test]
fn a_queued_prompt_is_said_once_where_it_is_delivered() {
    let got = said(
        Format::Claude,
        &[
            // Delivered after the turn: the user record says it.
            r#"{"type":"queue-operation","operation":"enqueue","content":"after the turn"}"#,
            r#"{"type":"queue-operation","operation":"dequeue"}"#,
            r#"{"type":"user","message":{"content":"after the turn"}}"#,
            // Mid-turn, attachment first: the attachment says it.
            r#"{"type":"queue-operation","operation":"enqueue","content":"mid-turn A"}"#,
            r#"{"type":"attachment","attachment":{"type":"queued_command","prompt":"mid-turn A","commandMode":"prompt"}}"#,
            r#"{"type":"queue-operation","operation":"remove"}"#,
            // Mid-turn, remove first: the remove says it, not the attachment.
            r#"{"type":"queue-operation","operation":"enqueue","content":"stop"}"#,
            r#"{"type":"queue-operation","operation":"remove","timestamp":"2026-04-05T07:40:46.400Z"}"#,
            r#"{"type":"attachment","attachment":{"type":"queued_command","prompt":"stop","commandMode":"prompt"}}"#,
            // Mid-turn with nothing but the remove (2.1.92).
            r#"{"type":"queue-operation","operation":"enqueue","content":"show me the list"}"#,
            r#"{"type":"queue-operation","operation":"remove"}"#,
            // Taken back to the input box: nothing said yet.
            r#"{"type":"queue-operation","operation":"enqueue","content":"draft"}"#,
            r#"{"type":"queue-operation","operation":"popAll","content":"draft"}"#,
            r#"{"type":"queue-operation","operation":"remove"}"#,
        ],
    );
    let want =
        [("user", "after the turn\n"), ("user", "mid-turn A\n"), ("user", "stop\n"), ("user", "show me the list\n")];
    assert_eq!(got, pairs(&want));
}

#[test]
fn codex_bookkeeping_records_are_not_messages() {
    let got = said(
        Format::Codex,
        &[
            r#"{"timestamp":"2026-07-25T21:39:16.135Z","type":"session_meta","payload":{"id":"t","base_instructions":{"text":"You are Codex"}}}"#,
            r#"{"timestamp":"2026-07-25T21:40:16.135Z","type":"session_meta","payload":{"id":"t","thread_source":"user"}}"#,
            r#"{"timestamp":"2026-07-25T21:39:16.135Z","type":"turn_context","payload":{"cwd":"/","model":"gpt"}}"#,
            r#"{"timestamp":"2026-07-25T21:39:16.135Z","type":"world_state","payload":{"full":true,"state":{"current_date":"2026-07-26"}}}"#,
            r#"{"timestamp":"2026-07-25T21:39:16.135Z","type":"event_msg","payload":{"type":"agent_message","message":"copy","phase":"commentary"}}"#,
            r#"{"timestamp":"2026-07-25T21:39:16.135Z","type":"event_msg","payload":{"type":"agent_reasoning","text":"**copy**"}}"#,
            r#"{"timestamp":"2026-07-25T21:39:16.135Z","type":"event_msg","payload":{"type":"exited_review_mode","review_output":{"findings":[]}}}"#,
            r#"{"timestamp":"2025-11-22T20:48:37.053Z","type":"response_item","payload":{"type":"ghost_snapshot","ghost_commit":{"id":"d8b2"}}}"#,
            r#"{"timestamp":"2025-11-22T20:48:37.053Z","type":"response_item","payload":{"type":"compaction","encrypted_content":"gAAA"}}"#,
            r#"{"timestamp":"2026-07-26T08:37:07.756Z","type":"compacted","payload":{"message":"","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"old"}]}]}}"#,
            r#"{"id":"6fa6","timestamp":"2025-09-24T01:49:52.132Z","instructions":null,"git":{}}"#,
            r#"{"record_type":"state"}"#,
        ],
    );
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn codex_messages_by_role_whatever_their_phase() {
    let got = said(
        Format::Codex,
        &[
            r#"{"timestamp":"2026-02-22T13:04:25.104Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"looking"}],"phase":"commentary"}}"#,
            r#"{"timestamp":"2026-02-22T13:04:25.104Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}],"phase":"final_answer"}}"#,
            r#"{"timestamp":"2026-02-22T13:04:02.192Z","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>"},{"type":"input_text","text":"<app-context>"}]}}"#,
            r#"{"timestamp":"2026-05-12T13:46:14.038Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<subagent_notification>\n{}"}]}}"#,
            r#"{"timestamp":"2026-05-12T13:46:14.038Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<turn_aborted>\nThe user interrupted"}]}}"#,
            r#"{"timestamp":"2026-05-12T13:57:11.936Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"why?\n"},{"type":"input_text","text":"<image>"},{"type":"input_image","image_url":"data:image/png;base64,iVBO"},{"type":"input_text","text":"</image>"}]}}"#,
        ],
    );
    let want = [
        ("assistant", "looking\n"),
        ("assistant", "done\n"),
        ("system", "<permissions instructions>\n<app-context>\n"),
        ("system", "<subagent_notification>\n{}\n"),
        ("system", "<turn_aborted>\nThe user interrupted\n"),
        ("user", "why?\n<image>\n[image]\n</image>\n"),
    ];
    assert_eq!(got, pairs(&want));
}

#[test]
fn codex_tool_calls_of_every_shape_are_named_after_their_tool() {
    let got = said(
        Format::Codex,
        &[
            r#"{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"tool_search_call","call_id":"ts1","execution":"client","arguments":{"query":"calendar"}}}"#,
            r#"{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"tool_search_output","call_id":"ts1","execution":"client","tools":[{"name":"cal"}]}}"#,
            r#"{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"local_shell_call","call_id":"l1","status":"completed","action":{"type":"exec","command":["ls"]}}}"#,
            r#"{"timestamp":"2026-01-01T00:00:03Z","type":"response_item","payload":{"type":"function_call_output","call_id":"l1","output":[{"type":"input_text","text":"Script completed\n"},{"type":"input_image","image_url":"data:"}]}}"#,
            r#"{"timestamp":"2026-01-01T00:00:04Z","type":"response_item","payload":{"type":"brand_new_item","text":"said somehow"}}"#,
        ],
    );
    let want = [
        ("tool_search", "tool_search_call\n{\"query\":\"calendar\"}\n"),
        (
            "tool_search-result",
            "{\"type\":\"tool_search_output\",\"call_id\":\"ts1\",\"execution\":\"client\",\"tools\":[{\"name\":\"cal\"}]}\n",
        ),
        ("local_shell", "local_shell_call\n{\"type\":\"exec\",\"command\":[\"ls\"]}\n"),
        ("local_shell-result", "Script completed\n[image]\n"),
        ("system", "{\"type\":\"brand_new_item\",\"text\":\"said somehow\"}\n"),
    ];
    assert_eq!(got, pairs(&want));
}

#[test]
fn codex_reasoning_in_the_clear_is_thinking_and_a_compaction_summary_is_the_harness() {
    let got = said(
        Format::Codex,
        &[
            r#"{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"**Plan**"}],"content":[{"type":"reasoning_text","text":"step one"}],"encrypted_content":"gAAA"}}"#,
            r#"{"timestamp":"2026-01-01T00:00:01Z","type":"compacted","payload":{"message":"Summary of the work so far","replacement_history":[]}}"#,
        ],
    );
    assert_eq!(got, pairs(&[("thinking", "**Plan**\nstep one\n"), ("system", "Summary of the work so far\n")]));
}

#[test]
fn a_legacy_rollout_reads_its_bare_items() {
    let file = lines(&[
        r#"{"id":"6fa6","timestamp":"2025-09-24T01:49:52.132Z","instructions":null,"git":{}}"#,
        r#"{"record_type":"state"}"#,
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>E:\\x</cwd>"}]}"#,
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"update the plan"}]}"#,
        r#"{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"**Planning**"}],"content":null,"encrypted_content":"gAAA"}"#,
        r#"{"type":"function_call","name":"update_plan","arguments":"{\"plan\":[]}","call_id":"call_J"}"#,
        r#"{"type":"function_call_output","call_id":"call_J","output":"Plan updated"}"#,
        r#"{"record_type":"state"}"#,
    ]);
    let mut ix = index(Format::Codex, &file);
    assert_eq!(
        names(&ix),
        "00000000-system 00000001-user 00000002-thinking 00000003-update_plan 00000004-update_plan-result"
    );
    assert_eq!(text(&mut ix, &file, 3), "update_plan\n{\"plan\":[]}\n");
    assert_eq!(text(&mut ix, &file, 0), "<environment_context>\n  <cwd>E:\\x</cwd>\n");
    // The items carry no time: they were written after the header's.
    assert_eq!(ix.info(4).unwrap().time, crate::chat::parse_time(b"2025-09-24T01:49:52.132Z").unwrap());
}

/// Claude Code 2.1.33x writes these besides its messages: all bookkeeping
/// (docs/CHAT.md has each one's row), none counted as unknown.
#[test]
fn claude_2_1_33x_records_are_bookkeeping_and_known() {
    let types = [
        "queue-operation",
        "last-prompt",
        "custom-title",
        "ai-title",
        "summary",
        "tag",
        "agent-name",
        "agent-color",
        "agent-setting",
        "relocated",
        "worktree-state",
        "mode",
        "permission-mode",
        "repl-mode",
        "memory-mode",
        "isolation-latch",
        "atis-latch",
        "session-owner",
        "cost-state",
        "pr-link",
        "bridge-session",
        "frame-link",
        "observer-ref",
        "file-history-snapshot",
        "file-history-delta",
        "attribution-snapshot",
        "content-replacement",
        "fork-context-ref",
        "derived-from",
        "ended-by-model",
    ];
    let recs: Vec<String> = types
        .iter()
        .map(|t| format!(r#"{{"type":"{t}","sessionId":"s","uuid":"{t}","content":"not said","message":"nor this"}}"#))
        .collect();
    let file = lines(&recs.iter().map(String::as_str).collect::<Vec<_>>());
    let ix = index(Format::Claude, &file);
    assert_eq!(ix.len(), 0);
    assert!(ix.drift().unknown.is_empty(), "{:?}", ix.drift().unknown);
    let said = said(
        Format::Claude,
        &[
            r#"{"type":"system","subtype":"model_fallback","content":"Switched to Sonnet: Opus is overloaded","uuid":"x1"}"#,
            r#"{"type":"system","subtype":"scheduled_task_fire","content":"Running the nightly check","uuid":"x2"}"#,
            r#"{"type":"system","subtype":"cloud_session_status","content":"Cloud session resumed","uuid":"x3"}"#,
        ],
    );
    assert_eq!(said.len(), 3, "system subtypes with text are the harness speaking");
}

/// A record type no rule knows is no message, and never vanishes
/// silently: it is counted (under `/health`), with whether it held text.
#[test]
fn an_unknown_record_type_is_counted_with_whether_it_held_text() {
    let file = lines(&[
        r#"{"type":"brand-new","uuid":"n1","message":{"role":"user","content":"words nobody sees"}}"#,
        r#"{"type":"brand-new","uuid":"n2","flags":7}"#,
        r#"{"type":"other-new","uuid":"n3"}"#,
        r#"{"type":"attachment","uuid":"n4","attachment":{"type":"new_attachment","content":"x"}}"#,
        r#"{"type":"system","uuid":"n5","subtype":"new_silent_thing"}"#,
        r#"{"type":"user","uuid":"n6","version":"2.1.339","message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"user","uuid":"n7","message":{"role":"user","content":"cut sh"#,
    ]);
    let ix = index(Format::Claude, &file);
    let u: Vec<(String, u64, u64)> = ix
        .drift()
        .unknown
        .iter()
        .map(|u| (String::from_utf8_lossy(&u.name).into_owned(), u.count, u.with_text))
        .collect();
    assert_eq!(
        u,
        [
            ("brand-new".to_string(), 2, 1),
            ("other-new".to_string(), 1, 0),
            ("attachment/new_attachment".to_string(), 1, 1),
            ("system/new_silent_thing".to_string(), 1, 0),
        ]
    );
    assert_eq!(ix.drift().bad_lines, 1, "the cut line");
    assert_eq!(ix.drift().version.map(|v| v.to_string()).as_deref(), Some("2.1.339"));
}

/// Codex 0.17x: `inter_agent_communication` carries one agent's words to
/// another and is persisted alone (codex records no response item for
/// it: `record_inter_agent_communication`), so it is an `agent` message;
/// its `_metadata` twin and the other new records are bookkeeping.
#[test]
fn codex_0_17x_records_and_another_agents_words() {
    let file = lines(&[
        r#"{"timestamp":"2026-11-02T08:00:00.000Z","ordinal":0,"type":"session_meta","payload":{"id":"t","cli_version":"0.176.0"}}"#,
        r#"{"timestamp":"2026-11-02T08:00:01.000Z","ordinal":1,"type":"dynamic_tools_updated","payload":{"tools":[]}}"#,
        r#"{"timestamp":"2026-11-02T08:00:02.000Z","ordinal":2,"type":"inter_agent_communication","payload":{"author":"/root/worker","recipient":"/root","other_recipients":[],"content":"The tests pass on my branch.","trigger_turn":true}}"#,
        r#"{"timestamp":"2026-11-02T08:00:02.001Z","ordinal":3,"type":"inter_agent_communication_metadata","payload":{"trigger_turn":true}}"#,
        r#"{"timestamp":"2026-11-02T08:00:03.000Z","ordinal":4,"type":"world_state","payload":{"full":true}}"#,
        r#"{"timestamp":"2026-11-02T08:00:03.000Z","ordinal":5,"type":"retained_context","payload":{"type":"x"}}"#,
        r#"{"timestamp":"2026-11-02T08:00:03.000Z","ordinal":6,"type":"security_risk_score","payload":{"score":1}}"#,
        r#"{"timestamp":"2026-11-02T08:00:03.000Z","ordinal":7,"type":"realtime_item","payload":{"kind":"x"}}"#,
        r#"{"timestamp":"2026-11-02T08:00:04.000Z","ordinal":8,"type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","id":"i","content":[{"type":"Text","text":"copy"}]}}}"#,
        r#"{"timestamp":"2026-11-02T08:00:05.000Z","ordinal":9,"type":"brand_new_record","payload":{"content":"unseen words"}}"#,
    ]);
    let mut ix = index(Format::Codex, &file);
    assert_eq!(names(&ix), "00000000-agent");
    assert_eq!(text(&mut ix, &file, 0), "/root/worker\nThe tests pass on my branch.\n");
    let u = &ix.drift().unknown;
    assert_eq!((u.len(), &u[0].name[..], u[0].with_text), (1, &b"brand_new_record"[..], 1));
}

/// dsh (as the demo home's transcript writes it, session format 0): a
/// header and step marks are bookkeeping, `message`s are said by role at
/// their own time (milliseconds since the epoch), anything else counted.
#[test]
fn dsh_messages_are_said_by_role_at_their_time() {
    let file = lines(&[
        r#"{"type":"session","version":0,"id":"d2","createdAt":1795886444051,"cwd":"/home/demo/src/webshop","delegationDepth":0,"time":1795886444051}"#,
        r#"{"type":"step/start","seq":1,"time":1795886444951}"#,
        r#"{"type":"message","seq":2,"time":1795886444952,"role":"user","text":"Summarise what changed."}"#,
        r#"{"type":"message","seq":3,"time":1795886451471,"role":"assistant","text":"Two fixes."}"#,
        r#"{"type":"message","seq":4,"time":1795886451480,"role":"critic","text":"?"}"#,
        r#"{"type":"step/end","seq":5,"time":1795886451484}"#,
        r#"{"type":"tool/new","seq":6,"time":1795886451490,"text":"unseen"}"#,
    ]);
    let mut ix = index(Format::Dsh, &file);
    assert_eq!(names(&ix), "00000000-user 00000001-assistant 00000002-system");
    assert_eq!(text(&mut ix, &file, 0), "Summarise what changed.\n");
    assert_eq!(ix.info(1).unwrap().time, 1_795_886_451);
    let u: Vec<&[u8]> = ix.drift().unknown.iter().map(|u| &u.name[..]).collect();
    assert_eq!(u, [&b"message/critic"[..], b"tool/new"]);
    assert_eq!(ix.drift().version.map(|v| v.to_string()).as_deref(), Some("0.0.0"));
    assert_eq!(ix.usage().total(), [0; 5]);
}
