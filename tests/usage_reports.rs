//! `/usage` (issue 22) through the daemon: every report on the demo home
//! agrees with the sessions' own `usage` files, and a reply copied into a
//! resumed session's file is counted once, in the session that spent it.

mod common;

use common::*;

const MSG_FID: u32 = 7;

/// A connection to `d`, attached, with a MiB msize.
fn attached(d: &Daemon) -> Conn {
    let mut c = d.connect();
    c.version(1 << 20, "9P2000");
    c.attach_ok(ROOT);
    c
}

/// A report's rows as their whitespace-separated cells, header first.
fn rows(text: &[u8]) -> Vec<Vec<String>> {
    String::from_utf8_lossy(text).lines().map(|l| l.split_whitespace().map(str::to_string).collect()).collect()
}

/// The five token columns of the first row whose `col`th cell is `word`.
fn tokens_of(t: &[Vec<String>], col: usize, word: &str, first_kind: usize) -> Vec<u64> {
    let r =
        t.iter().find(|r| r.get(col).map(String::as_str) == Some(word)).unwrap_or_else(|| panic!("no {word}: {t:?}"));
    r[first_kind..first_kind + 5].iter().map(|c| c.parse().unwrap()).collect()
}

#[test]
fn every_report_on_the_demo_home_adds_up_to_the_sessions_own_usage() {
    let d = Daemon::start(&["--demo", "--tz", "UTC"]);
    let mut c = attached(&d);
    let sessions = rows(&c.cat("/usage/sessions", MSG_FID));
    assert_eq!(sessions[0][..5], ["harness", "session", "started", "last_active", "models"]);
    let listed: Vec<&Vec<String>> = sessions[1..].iter().filter(|r| r[0] != "total").collect();
    assert!(listed.len() >= 8, "{sessions:?}");
    let mut sum = [0u64; 5];
    for r in &listed {
        let usage = String::from_utf8(c.cat(&format!("/sessions/{}/{}/usage", r[0], r[1]), MSG_FID)).unwrap();
        let own: Vec<u64> = usage.lines().take(5).map(|l| l.split(' ').nth(1).unwrap().parse().unwrap()).collect();
        let row: Vec<u64> = r[5..10].iter().map(|c| c.parse().unwrap()).collect();
        assert_eq!(row, own, "{}/{}: the report's row is its usage file", r[0], r[1]);
        sum.iter_mut().zip(&row).for_each(|(a, b)| *a += b);
    }
    assert_eq!(tokens_of(&sessions, 0, "total", 5), sum, "the sessions' total");
    for (report, first) in [("daily", "all"), ("weekly", "all"), ("monthly", "all")] {
        let t = rows(&c.cat(&format!("/usage/{report}"), MSG_FID));
        assert_eq!(tokens_of(&t, 0, first, 3), sum, "{report}'s grand total");
    }
    let projects = rows(&c.cat("/usage/projects", MSG_FID));
    assert_eq!(tokens_of(&projects, 0, "total", 2), sum, "projects' total");
    let prices = String::from_utf8(c.cat("/usage/prices", MSG_FID)).unwrap();
    assert!(prices.lines().any(|l| l.starts_with("gpt-5.6 ") && l.contains("unpriced")), "{prices}");
    let daily = String::from_utf8(c.cat("/usage/daily", MSG_FID)).unwrap();
    assert!(daily.lines().any(|l| l.contains(" gpt-5.6 ") && l.ends_with('?')), "unpriced is unknown, not 0: {daily}");
    let block = rows(&c.cat("/usage/block", MSG_FID));
    assert_eq!(block.len(), 2, "{block:?}");
}

fn assistant(uuid: &str, time: &str, msg: &str, req: &str, input: u64, output: u64) -> String {
    format!(
        r#"{{"type":"assistant","uuid":"{uuid}","timestamp":"{time}","cwd":"/w","requestId":"{req}","message":{{"id":"{msg}","model":"claude-opus-4-5","role":"assistant","content":[{{"type":"text","text":"hi"}}],"usage":{{"input_tokens":{input},"output_tokens":{output},"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}}}}"#
    )
}

#[test]
fn a_sessions_usage_says_what_its_replies_spent_today_after_its_totals() {
    let s = Scratch::new();
    let sid = "aaaaaaaa-0000-4000-8000-000000000009";
    let now = unix_now();
    let before = assistant("u1", &stamp(now - 2 * 86_400), "msg_1", "req_1", 100, 10);
    let today = assistant("u2", &stamp(now), "msg_2", "req_2", 7, 3);
    s.home_file(&format!(".claude/projects/-w/{sid}.jsonl"), format!("{before}\n{today}\n").as_bytes());
    let root = format!("claude={}", s.home.join(".claude").display());
    let d = Daemon::start_in(&s, &["--root", &root, "--tz", "UTC"]);
    let mut c = attached(&d);
    let usage = String::from_utf8(c.cat(&format!("/sessions/claude/{sid}/usage"), MSG_FID)).unwrap();
    assert!(usage.starts_with("input 107\noutput 13\n"), "{usage}");
    let today: Vec<&str> = usage.lines().filter(|l| l.starts_with("today.")).collect();
    assert_eq!(
        today,
        ["today.input 7", "today.output 3", "today.cache_read 0", "today.cache_write 0", "today.reasoning 0"],
        "{usage}"
    );
    assert!(usage.ends_with("today.reasoning 0\n"), "after the totals and the models': {usage}");
}

#[test]
fn a_reply_copied_into_a_resumed_session_counts_once_in_the_session_that_spent_it() {
    let s = Scratch::new();
    let first = "aaaaaaaa-0000-4000-8000-000000000001";
    let resumed = "aaaaaaaa-0000-4000-8000-000000000002";
    let spent = assistant("u1", "2026-11-30T10:00:00.000Z", "msg_1", "req_1", 1_000_000, 10);
    s.home_file(&format!(".claude/projects/-w/{first}.jsonl"), format!("{spent}\n").as_bytes());
    let again = assistant("u2", "2026-11-30T11:00:00.000Z", "msg_2", "req_2", 2_000_000, 20);
    s.home_file(&format!(".claude/projects/-w/{resumed}.jsonl"), format!("{spent}\n{again}\n").as_bytes());
    let root = format!("claude={}", s.home.join(".claude").display());
    let d = Daemon::start_in(&s, &["--root", &root, "--tz", "UTC"]);
    let mut c = attached(&d);
    // Each file's own usage holds the copy: what the harness wrote.
    let own = String::from_utf8(c.cat(&format!("/sessions/claude/{resumed}/usage"), MSG_FID)).unwrap();
    assert!(own.starts_with("input 3000000\n"), "{own}");
    let sessions = rows(&c.cat("/usage/sessions", MSG_FID));
    assert_eq!(tokens_of(&sessions, 1, first, 5)[..2], [1_000_000, 10]);
    assert_eq!(tokens_of(&sessions, 1, resumed, 5)[..2], [2_000_000, 20], "the copy is not counted again");
    let daily = rows(&c.cat("/usage/daily", MSG_FID));
    assert_eq!(tokens_of(&daily, 0, "all", 3)[..2], [3_000_000, 30]);
    // $5 a million input, $25 a million output.
    assert_eq!(daily.last().unwrap().last().unwrap(), "15.0008");
    // Read again, nothing changed: the same text (the settled reports are
    // kept while every transcript is as it was).
    assert_eq!(rows(&c.cat("/usage/daily", MSG_FID)), daily);
    // A reply more: a report a moment later counts it.
    let more = assistant("u3", "2026-11-30T12:00:00.000Z", "msg_3", "req_3", 4_000_000, 40);
    let path = s.home.join(format!(".claude/projects/-w/{first}.jsonl"));
    std::fs::write(&path, format!("{spent}\n{more}\n")).unwrap();
    // (A `usage` may be a moment old: `CHAT_FRESH_FOR`, a second.)
    let grown = poll(std::time::Duration::from_secs(10), || {
        let t = rows(&c.cat("/usage/daily", MSG_FID));
        (tokens_of(&t, 0, "all", 3)[..2] == [7_000_000, 70]).then_some(t)
    });
    assert!(grown.is_some(), "the grown transcript is never counted");
}

#[test]
fn nineagents_usage_prints_a_report_and_keeps_the_rows_within_the_dates() {
    let d = Daemon::start(&["--demo", "--tz", "UTC"]);
    let addr = format!("unix!{}", d.socket.as_ref().unwrap().display());
    let run = |args: &[&str]| {
        let mut all = vec!["usage", "-a", addr.as_str()];
        all.extend_from_slice(args);
        let out = d.client(&all);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, whole, _) = run(&[]);
    assert_eq!(code, Some(0));
    assert!(whole.starts_with("day "), "daily by default: {whole}");
    let (code, since, _) = run(&["--since", "2026-11-28", "daily"]);
    assert_eq!(code, Some(0), "{since}");
    let days: Vec<&str> = since.lines().skip(1).map(|l| l.split_whitespace().next().unwrap()).collect();
    assert!(days.iter().all(|d| *d == "all" || *d >= "2026-11-28"), "{since}");
    assert!(days.contains(&"2026-11-28") && !days.contains(&"2026-11-27"), "{since}");
    let grand = rows(since.as_bytes()).last().unwrap().clone();
    let per_day: u64 = rows(since.as_bytes())
        .iter()
        .filter(|r| r.get(1).map(String::as_str) == Some("total") && r[0] != "all")
        .map(|r| r[3].parse::<u64>().unwrap())
        .sum();
    assert_eq!(grand[3].parse::<u64>().unwrap(), per_day, "the grand total is the kept days': {since}");
    let (code, _, err) = run(&["--since", "2026-11-28", "projects"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("projects has no dates"), "{err}");
}

fn codex_rollout(id: &str, parent: Option<&str>, input: u64, output: u64) -> String {
    let source = match parent {
        Some(p) => format!(r#","source":{{"subagent":{{"thread_spawn":{{"parent_thread_id":"{p}","depth":1}}}}}}"#),
        None => String::new(),
    };
    [
        format!(r#"{{"timestamp":"2026-11-30T10:00:00.000Z","type":"session_meta","payload":{{"id":"{id}","timestamp":"2026-11-30T10:00:00.000Z","cwd":"/w","cli_version":"0.170.0"{source}}}}}"#),
        r#"{"timestamp":"2026-11-30T10:00:00.100Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}"#.to_string(),
        format!(r#"{{"timestamp":"2026-11-30T10:00:05.000Z","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{input},"cached_input_tokens":0,"output_tokens":{output},"reasoning_output_tokens":0}}}}}}}}"#),
    ]
    .join("\n")
        + "\n"
}

#[test]
fn a_codex_subagents_rollout_counts_with_its_parent_session() {
    let s = Scratch::new();
    let parent = "019ad000-0000-7000-8000-000000000001";
    let child = "019ad000-0000-7000-8000-000000000002";
    let day = ".codex/sessions/2026/11/30";
    s.home_file(
        &format!("{day}/rollout-2026-11-30T10-00-00-{parent}.jsonl"),
        codex_rollout(parent, None, 1000, 10).as_bytes(),
    );
    s.home_file(
        &format!("{day}/rollout-2026-11-30T10-00-01-{child}.jsonl"),
        codex_rollout(child, Some(parent), 500, 5).as_bytes(),
    );
    let root = format!("codex={}", s.home.join(".codex").display());
    let d = Daemon::start_in(&s, &["--root", &root, "--tz", "UTC"]);
    let mut c = attached(&d);
    let sessions = rows(&c.cat("/usage/sessions", MSG_FID));
    let listed: Vec<&String> = sessions[1..].iter().filter(|r| r[0] != "total").map(|r| &r[1]).collect();
    assert_eq!(listed, [parent], "the subagent is its parent's, not a session of its own: {sessions:?}");
    assert_eq!(tokens_of(&sessions, 1, parent, 5)[..2], [1500, 15], "{sessions:?}");
    let own = String::from_utf8(c.cat(&format!("/sessions/codex/{parent}/usage"), MSG_FID)).unwrap();
    assert!(own.starts_with("input 1500\noutput 15\n"), "the report agrees with the session's usage: {own}");
}

#[test]
fn every_real_transcript_is_a_row_of_the_sessions_report_equal_to_its_usage_file() {
    let s = Scratch::new();
    let Some(roots) = real_home(&s, "usage_reports") else { return };
    let mut args: Vec<&str> = roots.iter().map(String::as_str).collect();
    args.extend(["--tz", "UTC"]);
    let d = Daemon::start_in(&s, &args);
    let mut c = attached(&d);
    let sessions = rows(&c.cat("/usage/sessions", MSG_FID));
    let listed: Vec<&Vec<String>> = sessions[1..].iter().filter(|r| r[0] != "total").collect();
    let mut sum = [0u64; 5];
    for r in &listed {
        let usage = String::from_utf8(c.cat(&format!("/sessions/{}/{}/usage", r[0], r[1]), MSG_FID)).unwrap();
        let own: Vec<u64> = usage.lines().take(5).map(|l| l.split(' ').nth(1).unwrap().parse().unwrap()).collect();
        let row: Vec<u64> = r[5..10].iter().map(|c| c.parse().unwrap()).collect();
        // A reply copied into another real file (none are known to be)
        // would count once in the report and in each file's own usage.
        assert_eq!(row, own, "{}/{}", r[0], r[1]);
        sum.iter_mut().zip(&row).for_each(|(a, b)| *a += b);
    }
    assert!(listed.len() >= 60, "{} sessions listed", listed.len());
    let daily = rows(&c.cat("/usage/daily", MSG_FID));
    assert_eq!(tokens_of(&daily, 0, "all", 3), sum, "the days' total is the sessions'");
    eprintln!("usage_reports: {} real sessions, totals {sum:?}", listed.len());
}

#[test]
fn a_rollout_kept_both_live_and_archived_is_one_session_counted_once() {
    let s = Scratch::new();
    let id = "019ad000-0000-7000-8000-0000000000aa";
    let body = codex_rollout(id, None, 1000, 10);
    s.home_file(&format!(".codex/sessions/2026/11/30/rollout-2026-11-30T10-00-00-{id}.jsonl"), body.as_bytes());
    s.home_file(&format!(".codex/archived_sessions/rollout-2026-11-30T10-00-00-{id}.jsonl"), body.as_bytes());
    let root = format!("codex={}", s.home.join(".codex").display());
    let d = Daemon::start_in(&s, &["--root", &root, "--tz", "UTC"]);
    let mut c = attached(&d);
    let sessions = rows(&c.cat("/usage/sessions", MSG_FID));
    assert_eq!(sessions.len(), 3, "a header, the session once, the total: {sessions:?}");
    let daily = rows(&c.cat("/usage/daily", MSG_FID));
    assert_eq!(tokens_of(&daily, 0, "all", 3)[..2], [1000, 10], "counted once: {daily:?}");
}

/// `t` seconds since 1970 as a transcript's timestamp, in UTC.
fn stamp(t: u64) -> String {
    let (days, secs) = ((t / 86_400) as i64, t % 86_400);
    let (y, m, d) = nineagents::localtime::civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.000Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// `/usage/wait` read on `fid` of `c`: the line its next read answers
/// with, as cells, within `deadline`.
fn wait_line(c: &mut Conn, fid: u32, deadline: std::time::Duration) -> Vec<String> {
    let tag = c.tag();
    c.send(tag, &Tmsg::Read { fid, offset: 0, count: 8192 });
    c.set_read_timeout(deadline);
    let r = c.recv();
    c.set_read_timeout(REPLY_DEADLINE);
    assert_eq!(r.tag(), tag, "{r:?}");
    let text = String::from_utf8(r.data().to_vec()).unwrap();
    assert!(text.ends_with('\n') && text.lines().count() == 1, "one line: {text:?}");
    text.split_whitespace().map(str::to_string).collect()
}

/// How long a change may take to reach a parked read of `/usage/wait`:
/// generous (it settles for a second first).
const USAGE_WAKE: std::time::Duration = std::time::Duration::from_secs(15);

#[test]
fn a_read_of_usage_wait_answers_the_block_now_and_again_when_a_reply_adds_to_it() {
    use std::io::Write;
    let s = Scratch::new();
    let sid = "bbbbbbbb-0000-4000-8000-000000000001";
    let t0 = unix_now() - 600;
    let first = assistant("u1", &stamp(t0), "msg_1", "req_1", 1000, 10);
    s.home_file(&format!(".claude/projects/-w/{sid}.jsonl"), format!("{first}\n").as_bytes());
    let root = format!("claude={}", s.home.join(".claude").display());
    let d = Daemon::start_in(&s, &["--root", &root, "--tz", "UTC"]);
    let mut c = attached(&d);
    let listed: Vec<String> = c.list("/usage", MSG_FID, 8192).into_iter().map(|e| e.name.clone()).collect();
    assert!(listed.contains(&"wait".to_string()) && listed.contains(&"block".to_string()), "{listed:?}");
    const W: u32 = 9;
    c.walk_path("/usage/wait", W);
    c.open_ok(W, OREAD);
    // The first read answers at once: the block as it is, `block`'s row.
    let line = wait_line(&mut c, W, REPLY_DEADLINE);
    let block = rows(&c.cat("/usage/block", MSG_FID));
    assert_eq!(line[..9], block[1][..9], "the line is block's row: {line:?} {block:?}");
    assert_eq!(line[3..5], ["1000", "10"], "{line:?}");
    let tokens = |line: &[String]| -> Vec<u64> { line[3..8].iter().map(|c| c.parse().unwrap()).collect() };
    // A line that adds nothing to the block (a user's) leaves it parked.
    let transcript = s.home.join(format!(".claude/projects/-w/{sid}.jsonl"));
    let append = |path: &std::path::Path, line: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
        writeln!(f, "{line}").unwrap();
    };
    let tag = c.tag();
    c.send(tag, &Tmsg::Read { fid: W, offset: 0, count: 8192 });
    let user = format!(
        r#"{{"type":"user","uuid":"u2","timestamp":"{}","message":{{"role":"user","content":"go"}}}}"#,
        stamp(t0 + 1)
    );
    append(&transcript, &user);
    c.set_read_timeout(std::time::Duration::from_secs(3));
    if let Ok(r) = c.next() {
        panic!("a change that is not the block's answered: {r:?}");
    }
    c.set_read_timeout(REPLY_DEADLINE);
    // A reply in the session's transcript answers the parked read.
    append(&transcript, &assistant("u3", &stamp(unix_now()), "msg_3", "req_3", 2000, 20));
    c.set_read_timeout(USAGE_WAKE);
    let r = c.recv();
    c.set_read_timeout(REPLY_DEADLINE);
    assert_eq!(r.tag(), tag);
    let line: Vec<String> = String::from_utf8_lossy(&r.data()).split_whitespace().map(str::to_string).collect();
    assert_eq!(tokens(&line)[..2], [3000, 30], "{line:?}");
    // A session of a project new since: its directory is made, then its
    // transcript written (what a new Claude Code session in another
    // directory does).
    let other = "bbbbbbbb-0000-4000-8000-000000000002";
    append(
        &s.home.join(format!(".claude/projects/-x/{other}.jsonl")),
        &assistant("u4", &stamp(unix_now()), "msg_4", "req_4", 4000, 40),
    );
    let line = wait_line(&mut c, W, USAGE_WAKE);
    assert_eq!(tokens(&line)[..2], [7000, 70], "{line:?}");
    // A subagent's transcript, in a directory that did not exist.
    append(
        &s.home.join(format!(".claude/projects/-w/{sid}/subagents/agent-a1.jsonl")),
        &assistant("u5", &stamp(unix_now()), "msg_5", "req_5", 8000, 80)
            .replace(r#""cwd":"/w""#, r#""cwd":"/w","isSidechain":true,"agentId":"a1""#),
    );
    let line = wait_line(&mut c, W, USAGE_WAKE);
    assert_eq!(tokens(&line)[..2], [15000, 150], "{line:?}");
    // A flushed read, then a clunk: the reader and its watches go.
    let tag = c.tag();
    c.send(tag, &Tmsg::Read { fid: W, offset: 0, count: 8192 });
    let ftag = c.tag();
    c.send(ftag, &Tmsg::Flush { oldtag: tag });
    let r = c.recv();
    assert_eq!(r.tag(), ftag, "{r:?}");
    let st = d.status_line();
    assert!(st.get("watches") >= 3, "projects/, two projects, a session's: {}", st.line);
    c.clunk_ok(W);
    let st = d.status_line();
    assert_eq!((st.get("watches"), st.get("waits")), (0, 0), "{}", st.line);
}
