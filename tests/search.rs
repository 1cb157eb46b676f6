//! `/search` (issue 23) through the daemon: every message whose text (as
//! its chat file reads) holds the terms is listed once and nothing else,
//! checked against reading every message of the home and matching here;
//! the filters, the cap, the write-then-read form, a bad query, and a
//! search let go mid-way.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;

const FID: u32 = 7;
const Q: u32 = 8;

fn attached(d: &Daemon) -> Conn {
    let mut c = d.connect();
    c.version(1 << 20, "9P2000");
    c.attach_ok(ROOT);
    c
}

/// Every message of every session (subagents' too), by its path, as its
/// chat file reads.
fn every_message(c: &mut Conn) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for h in ["claude", "codex", "dsh", "omp", "pi"] {
        let Ok(sessions) = c.try_list(&format!("/sessions/{h}"), FID, 65536) else { continue };
        for s in sessions {
            let dir = format!("/sessions/{h}/{}", s.name);
            let mut chats = vec![format!("{dir}/chat")];
            if let Ok(agents) = c.try_list(&format!("{dir}/agents"), FID, 65536) {
                chats.extend(agents.iter().map(|a| format!("{dir}/agents/{}/chat", a.name)));
            }
            for chat in chats {
                let Ok(msgs) = c.try_list(&chat, FID, 65536) else { continue };
                for m in msgs {
                    let path = format!("{chat}/{}", m.name);
                    let text = c.try_cat(&path, FID).unwrap_or_else(|e| panic!("{path}: {e}"));
                    out.insert(path, text);
                }
            }
        }
    }
    out
}

/// The results of `query` read through `/search/<query>`: each line's
/// path and context, in order.
fn search(c: &mut Conn, query: &str) -> Vec<(String, String)> {
    let text = c.cat(&format!("/search/{query}"), FID);
    lines(&text)
}

fn lines(text: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(text)
        .lines()
        .map(|l| {
            let (p, ctx) = l.split_once('\t').unwrap_or_else(|| panic!("no tab in {l:?}"));
            (p.to_string(), ctx.to_string())
        })
        .collect()
}

/// The paths whose text holds every term (ASCII case folded with `fold`).
fn expected(all: &BTreeMap<String, Vec<u8>>, terms: &[&str], fold: bool) -> Vec<String> {
    let norm = |b: &[u8]| if fold { b.to_ascii_lowercase() } else { b.to_vec() };
    all.iter()
        .filter(|(_, text)| {
            let t = norm(text);
            terms.iter().all(|term| memchr::memmem::find(&t, &norm(term.as_bytes())).is_some())
        })
        .map(|(p, _)| p.clone())
        .collect()
}

/// The result paths, sorted, each once (a path twice fails).
fn paths(results: &[(String, String)]) -> Vec<String> {
    let mut v: Vec<String> = results.iter().map(|(p, _)| p.clone()).collect();
    v.sort();
    let n = v.len();
    v.dedup();
    assert_eq!(v.len(), n, "a message listed twice");
    v
}

/// The search's results are the messages that hold the terms; searched
/// again (from what the first search kept), the same lines.
fn check_terms(c: &mut Conn, all: &BTreeMap<String, Vec<u8>>, query: &str, terms: &[&str], fold: bool) -> usize {
    let got = search(c, query);
    for (p, ctx) in &got {
        assert!(!ctx.contains('\n') && ctx.len() <= 160, "{p}: context {ctx:?}");
    }
    let want = expected(all, terms, fold);
    assert_eq!(paths(&got), want, "query {query:?}");
    assert_eq!(search(c, query), got, "query {query:?} again");
    want.len()
}

#[test]
fn every_message_of_the_demo_home_holding_the_terms_is_listed_once_and_nothing_else() {
    let d = Daemon::start(&["--demo", "--tz", "UTC"]);
    let mut c = attached(&d);
    let all = every_message(&mut c);
    assert!(all.len() > 50, "{} messages", all.len());
    assert!(check_terms(&mut c, &all, "the", &["the"], false) > 10);
    assert!(check_terms(&mut c, &all, "-i PYTHON", &["python"], true) > 0);
    assert!(check_terms(&mut c, &all, "Python CI", &["Python", "CI"], false) > 0);
    assert_eq!(check_terms(&mut c, &all, "zzzqqq-nowhere", &["zzzqqq-nowhere"], false), 0);
    // A term JSON escapes (a quote) is looked for in the rendered text.
    assert!(check_terms(&mut c, &all, r#""\"command""#, &["\"command"], false) > 0);
    // Every path is walkable: its cat is the message.
    for (p, _) in search(&mut c, "import") {
        assert!(String::from_utf8_lossy(&c.cat(&p, FID)).contains("import"), "{p}");
    }
}

#[test]
fn filters_keep_the_messages_they_name() {
    let d = Daemon::start(&["--demo", "--tz", "UTC"]);
    let mut c = attached(&d);
    let all = every_message(&mut c);
    let the = expected(&all, &["the"], false);
    let got = paths(&search(&mut c, "the harness:codex"));
    assert_eq!(got, the.iter().filter(|p| p.starts_with("/sessions/codex/")).cloned().collect::<Vec<_>>());
    let users = paths(&search(&mut c, "the kind:user"));
    assert!(!users.is_empty());
    assert_eq!(users, the.iter().filter(|p| p.ends_with("-user")).cloned().collect::<Vec<_>>());
    assert!(search(&mut c, "the since:2099-01-01").is_empty(), "nothing written since");
    assert_eq!(paths(&search(&mut c, "the until:2099-01-01")), the);
    // (A path element holds no slash: the write form takes any cwd.)
    assert!(search(&mut c, "the cwd:nowhere").is_empty());
    // The cap is loud: the last line says there were more.
    let text = String::from_utf8(c.cat("/search/the max:2", FID)).unwrap();
    let got: Vec<&str> = text.lines().collect();
    assert_eq!(got.len(), 3, "{text}");
    assert!(got[2].starts_with("more\t"), "{text}");
}

#[test]
fn a_query_written_to_search_query_reads_its_results_on_the_same_fid() {
    let d = Daemon::start(&["--demo", "--tz", "UTC"]);
    let mut c = attached(&d);
    let by_name = c.cat("/search/Python", FID);
    c.walk_path("/search/query", Q);
    c.open_ok(Q, ORDWR);
    let r = c.rpc(&Tmsg::Write { fid: Q, offset: 0, data: b"Python" });
    assert!(matches!(r.msg(), Rmsg::Write { count: 6 }), "{r:?}");
    let written = c.read_all(Q);
    assert_eq!(written, by_name, "the same results either way");
    assert!(!written.is_empty());
    // Written again: the fid searches anew.
    let r = c.rpc(&Tmsg::Write { fid: Q, offset: 0, data: b"-i python kind:user" });
    assert!(matches!(r.msg(), Rmsg::Write { .. }), "{r:?}");
    assert_eq!(lines(&c.read_all(Q)).len(), 1);
    // A query that does not parse: the write is refused, a read says why.
    let r = c.rpc(&Tmsg::Write { fid: Q, offset: 0, data: b"x since:yesterday" });
    assert!(r.error().is_some(), "{r:?}");
    let why = String::from_utf8(c.read_all(Q)).unwrap();
    assert!(why.starts_with("error\tquery: since:") && why.contains("not a date"), "{why}");
    c.clunk_ok(Q);
    // Read before any query is written: empty, as a crawl finds it.
    assert!(c.cat("/search/query", Q).is_empty());
    // `/search/<query>` that does not parse: its read says why.
    let why = String::from_utf8(c.cat("/search/x max:nine", FID)).unwrap();
    assert!(why.starts_with("error\tquery: max:"), "{why}");
    assert_eq!(d.status_line().get("searches"), 0, "every search let go: {}", d.status_line().line);
}

#[test]
fn nineagents_search_prints_the_results_and_refuses_a_bad_query() {
    let d = Daemon::start(&["--demo", "--tz", "UTC"]);
    let addr = format!("unix!{}", d.socket.as_ref().unwrap().display());
    let out = d.client(&["search", "-a", &addr, "-i", "PYTHON", "kind:user"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("/sessions/codex/"), "{text}");
    let out = d.client(&["search", "-a", &addr, "x", "max:0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("max:"), "{out:?}");
    let help = d.client(&["search", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("kind:NAME"));
}

#[test]
fn a_search_flushed_or_clunked_mid_way_lets_go_and_keeps_what_it_found() {
    let d = Daemon::start(&["--demo", "--tz", "UTC"]);
    let mut c = attached(&d);
    let whole = c.cat("/search/the", FID);
    // One line a read: each read answers as soon as it has one.
    c.walk_path("/search/the", Q);
    c.open_ok(Q, OREAD);
    let first = c.read(Q, 0, 400).data();
    assert!(first.ends_with(b"\n") && first.len() < whole.len(), "{}", String::from_utf8_lossy(&first));
    // A read sent and flushed at once: what it found is the next read's.
    let tag = c.tag();
    c.send(tag, &Tmsg::Read { fid: Q, offset: 0, count: 8192 });
    let ftag = c.tag();
    c.send(ftag, &Tmsg::Flush { oldtag: tag });
    let mut rest = Vec::new();
    loop {
        let r = c.recv();
        if r.tag() == tag {
            rest.extend(r.data());
        }
        if r.tag() == ftag {
            break;
        }
    }
    let mut offset = 0;
    loop {
        let data = c.read(Q, offset, 8192).data();
        if data.is_empty() {
            break;
        }
        offset += data.len() as u64;
        rest.extend(data);
    }
    assert_eq!([first, rest].concat(), whole, "nothing lost, nothing twice");
    // Clunked half way: the search goes.
    c.walk_path("/search/a", Q + 1);
    c.open_ok(Q + 1, OREAD);
    assert!(!c.read(Q + 1, 0, 300).data().is_empty());
    assert_eq!(d.status_line().get("searches"), 2);
    c.clunk_ok(Q + 1);
    c.clunk_ok(Q);
    assert_eq!(d.status_line().get("searches"), 0);
}

#[test]
fn every_real_message_holding_the_terms_is_listed_once() {
    let s = Scratch::new();
    let Some(roots) = real_home(&s, "search") else { return };
    let mut args: Vec<&str> = roots.iter().map(String::as_str).collect();
    args.extend(["--tz", "UTC"]);
    let d = Daemon::start_in(&s, &args);
    let mut c = attached(&d);
    let all = every_message(&mut c);
    let mut counts = Vec::new();
    for (query, terms, fold) in [
        ("max:100000 error", &["error"][..], false),
        ("max:100000 -i TODO", &["todo"][..], true),
        ("max:100000 cargo test", &["cargo", "test"][..], false),
        (r#"max:100000 "\"file_path\"""#, &["\"file_path\""][..], false),
        ("max:100000 é", &["é"][..], false),
    ] {
        counts.push(check_terms(&mut c, &all, query, terms, fold));
    }
    eprintln!("search: {} real messages; results {counts:?}; {}", all.len(), d.status_line().line);
    assert!(counts[0] > 100, "{counts:?}");
    assert!(d.status_line().get("kept_reads") > 0, "the searches again read what the first kept");
}

/// A transcript of user prompts, one a line, their uuids numbered from
/// `first`.
fn prompts(first: usize, texts: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, t) in texts.iter().enumerate() {
        let i = first + i;
        let line = format!(
            r#"{{"type":"user","uuid":"u{i}","timestamp":"2026-11-02T10:00:{i:02}.000Z","message":{{"role":"user","content":"{t}"}}}}"#
        );
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out
}

/// Until the file at `path` has not changed for `meta::SETTLED_NS` (and
/// some): a search keeps the positions only of a file that had settled.
fn settle(path: &std::path::Path) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).unwrap();
    let changed = std::time::UNIX_EPOCH
        + Duration::from_secs(m.ctime().max(m.mtime()) as u64)
        + Duration::from_nanos(m.ctime_nsec().max(m.mtime_nsec()) as u64);
    let at = changed + Duration::from_millis(100);
    poll(Duration::from_secs(5), || (std::time::SystemTime::now() >= at).then_some(())).expect("the clock moves");
}

#[test]
fn a_search_again_reads_the_positions_kept_and_a_changed_file_is_indexed_anew() {
    let s = Scratch::new();
    let sid = "5ea5c4ed-0000-4000-8000-000000000001";
    let rel = format!(".claude/projects/-p/{sid}.jsonl");
    let path = s.home_file(&rel, &prompts(0, &["a", "the needle is here, a long prompt"]));
    settle(&path);
    let d = Daemon::start_in(&s, &["--tz", "UTC"]);
    let mut c = attached(&d);
    let msg = |n: u32| format!("/sessions/claude/{sid}/chat/{n:08}-user");
    assert_eq!(paths(&search(&mut c, "needle")), [msg(1)]);
    let st = d.status_line();
    assert_eq!((st.get("kept"), st.get("kept_reads")), (1, 0), "{}", st.line);
    assert_eq!(paths(&search(&mut c, "needle")), [msg(1)]);
    let again = d.status_line();
    assert_eq!(again.get("kept_reads"), 1, "read from what the first kept");
    assert_eq!(again.get("files"), st.get("files"), "the file the copy was read with is closed with the search");
    // Rewritten to the same size, the prompts' lengths swapped: the kept
    // positions would name the wrong message.
    let again = prompts(0, &["the needle is here, a long prompt", "a"]);
    assert_eq!(again.len() as u64, std::fs::metadata(&path).unwrap().len());
    std::fs::write(&path, &again).unwrap();
    assert_eq!(paths(&search(&mut c, "needle")), [msg(0)]);
    assert_eq!(d.status_line().get("kept_reads"), 1, "a changed file is indexed anew");
    // Grown: the new message is found too.
    settle(&path);
    assert_eq!(paths(&search(&mut c, "needle")), [msg(0)], "kept again, settled");
    let mut grown = again.clone();
    grown.extend_from_slice(&prompts(2, &["x", "y", "another needle"]));
    std::fs::write(&path, &grown).unwrap();
    assert_eq!(paths(&search(&mut c, "needle")), [msg(0), msg(4)]);
    // A query whose every term could be a literal's text reads no raw
    // bytes to rule out, and still finds nothing that is not there.
    assert!(search(&mut c, "[image]").is_empty());
}
