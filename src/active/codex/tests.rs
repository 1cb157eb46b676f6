use super::*;

const ID: &[u8] = b"01a22198-ee9c-7596-a53d-e97bb5581911";
const NAME: &[u8] = b"rollout-2026-11-28T10-00-00-01a22198-ee9c-7596-a53d-e97bb5581911.jsonl";

#[test]
fn the_id_is_the_last_36_bytes_not_a_dash_split() {
    assert_eq!(rollout_id(NAME), Some(ID));
    assert_eq!(rollout_id(b"rollout-01a22198-ee9c-7596-a53d-e97bb5581911.jsonl"), Some(ID));
    for bad in [
        &b"rollout-2026-11-28T10-00-00-01a22198-ee9c-7596-a53d-e97bb5581911.json"[..],
        b"rollout-2026-11-28T10-00-00-01a22198-ee9c-7596-a53d-e97bb558191.jsonl",
        b"rollout-2026-11-28T10-00-00x01a22198-ee9c-7596-a53d-e97bb5581911.jsonl",
        b"rollout-.jsonl",
        b"notes-2026-01a22198-ee9c-7596-a53d-e97bb5581911.jsonl",
        b"",
    ] {
        assert_eq!(rollout_id(bad), None, "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn the_fd_route_takes_rollouts_under_sessions_only() {
    let good =
        b"/home/u/.codex/sessions/2026/11/28/rollout-2026-11-28T10-00-00-01a22198-ee9c-7596-a53d-e97bb5581911.jsonl";
    let targets: [&[u8]; 8] = [
        b"/dev/pts/3",
        b"socket:[88123]",
        good,
        good,
        b"/home/u/.codex/history.jsonl",
        b"/home/u/.codex/rollout-2026-11-28T10-00-00-01a22198-ee9c-7596-a53d-e97bb5581911.jsonl",
        b"/home/u/.codex/sessions/../sessions/rollout-2026-11-28T10-00-00-01a22198-ee9c-7596-a53d-e97bb5581911.jsonl",
        b"/home/u/.codex/sessions/2026/11/28/rollout-2026-11-28T10-00-00-01a22198-ee9c-7596-a53d-e97bb5581911.jsonl (deleted)",
    ];
    let found = fd_rollouts(&targets, b"/home/u/.codex");
    assert_eq!(found, [Rollout { rel: &good[15..], id: ID }]);
    assert!(found[0].rel.starts_with(b"sessions/2026/11/28/"));
}

const LOCKS: &[u8] = b"\
1: POSIX  ADVISORY  WRITE 700 00:37:111 0 EOF
2: FLOCK  ADVISORY  WRITE 657408 00:37:32607155 0 EOF
2: -> FLOCK  ADVISORY  WRITE 657409 00:37:32607155 0 EOF
3: FLOCK  ADVISORY  READ  657408 00:37:222 0 EOF
4: FLOCK  ADVISORY  WRITE 657408 fd:01:5324854 0 EOF
5: FLOCK  ADVISORY  WRITE 6574080 00:37:999 0 EOF
6: OFDLCK ADVISORY  WRITE -1 00:37:333 0 EOF
7: FLOCK  ADVISORY  WRITE 657408 00:37:32607155 0 EOF
8: FLOCK  ADVISORY  WRITE 657408 00:37:99999999999999999999999 0 EOF
9: FLOCK ADVISORY
";

#[test]
fn locks_yield_the_pids_write_flocks_and_nothing_else() {
    assert_eq!(held_write_flocks(LOCKS, 657408), [32607155, 5324854]);
    assert_eq!(held_write_flocks(LOCKS, 657409), Vec::<u64>::new());
    assert_eq!(held_write_flocks(LOCKS, 700), Vec::<u64>::new());
    assert_eq!(held_write_flocks(b"", 1), Vec::<u64>::new());
    assert_eq!(held_write_flocks(b"\xff\xfe garbage\n\n", 1), Vec::<u64>::new());
}

#[test]
fn lock_files_match_by_inode_alone() {
    let held = held_write_flocks(LOCKS, 657408);
    let files: [(&[u8], u64); 4] = [
        (b"01a22198-ee9c-7596-a53d-e97bb5581911.lock", 5324854),
        (b"01a21de2-c3dc-7942-913c-471f190a685b.lock", 1),
        (b"not-a-uuid.lock", 32607155),
        (b"01a21de2-c3dc-7942-913c-471f190a685b.tmp", 32607155),
    ];
    assert_eq!(locked_threads(&held, &files), [ID]);
}

#[test]
fn a_uuidv7_gives_the_millisecond_it_was_minted() {
    assert_eq!(uuidv7_ms(ID), Some(1_795_860_000_412));
    assert_eq!(uuidv7_ms(b"019fd608-da80-7713-bcdd-bc47748af23d"), Some(1_786_002_332_288));
    assert_eq!(uuidv7_ms(b"6fa66ef4-7fad-42f2-bb98-2f8210c8aadd"), None);
    assert_eq!(uuidv7_ms(b"../../../etc/passwd-xxxxxxxxxxxxxxxx"), None);
    assert_eq!(uuidv7_ms(b"ffffffff-ffff-7fff-bfff-ffffffffffff"), Some(0xffff_ffff_ffff));
}

#[test]
fn the_rollout_is_looked_for_on_the_utc_day_and_either_side() {
    let [day, before, after] = rollout_day_dirs(uuidv7_ms(ID).unwrap());
    assert_eq!(day, b"sessions/2026/11/28");
    assert_eq!(before, b"sessions/2026/11/27");
    assert_eq!(after, b"sessions/2026/11/29");
    let [day, before, after] = rollout_day_dirs(1_704_067_200_000); // 2024-01-01T00:00Z
    assert_eq!(
        (&day[..], &before[..], &after[..]),
        (&b"sessions/2024/01/01"[..], &b"sessions/2023/12/31"[..], &b"sessions/2024/01/02"[..])
    );
    let [_, _, last] = rollout_day_dirs(0xffff_ffff_ffff);
    assert!(last.starts_with(b"sessions/10889/"));
}

#[test]
fn civil_dates_hold_across_leap_years_and_the_epoch() {
    assert_eq!(civil_from_days(0), (1970, 1, 1));
    assert_eq!(civil_from_days(-1), (1969, 12, 31));
    assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    assert_eq!(civil_from_days(20_785), (2026, 11, 28));
    assert_eq!(civil_from_days(11_016), (2000, 2, 29));
}

#[test]
fn the_rollout_is_found_in_a_listing_by_its_id() {
    let names: [&[u8]; 3] =
        [b"rollout-2026-11-28T09-00-00-01a21de2-c3dc-7942-913c-471f190a685b.jsonl", b"notes.env", NAME];
    assert_eq!(rollout_in_listing(names, ID), Some(NAME));
    assert_eq!(rollout_in_listing(names, b"01a22198-ee9c-7596-a53d-e97bb5581912"), None);
}

const USER: &[u8] = br#"{"timestamp":"t","type":"session_meta","payload":{"id":"a","cwd":"/h","source":"cli","thread_source":"user","base_instructions":{"text":"long"}}}"#;
const SUB_NEW: &[u8] = br#"{"timestamp":"t","type":"session_meta","payload":{"id":"b","cwd":"/h","source":"cli","thread_source":"subagent"}}"#;
const SUB_OLD: &[u8] = br#"{"type":"session_meta","payload":{"id":"c","source":{"subagent":{"thread_spawn":{"parent_thread_id":"a","depth":1}}}}}"#;
const REVIEW: &[u8] = br#"{"type":"session_meta","payload":{"id":"d","source":{"subagent":"review"}}}"#;

#[test]
fn subagent_threads_are_known_by_their_first_record() {
    assert!(!is_subagent_thread(USER));
    assert!(is_subagent_thread(SUB_NEW));
    assert!(is_subagent_thread(SUB_OLD));
    assert!(is_subagent_thread(REVIEW));
    assert!(!is_subagent_thread(b""));
    assert!(!is_subagent_thread(br#"{"type":"session_meta","payload":{"id":"a","cwd":"/h","thread_source":"subag"#));
    assert!(is_subagent_thread(&SUB_NEW[..SUB_NEW.len() - 2]));
}

/// Ids minted in order: `A` first, `C` last.
const A: &[u8] = b"01a22198-0000-7000-8000-000000000001";
const B: &[u8] = b"01a22198-ee9c-7596-a53d-e97bb5581911";
const C: &[u8] = b"01a221cf-dd1c-7002-8002-000000000002";

#[test]
fn the_thread_written_last_that_is_not_a_subagents_wins() {
    let threads = [
        Thread { first_record: USER, mtime: 10, id: C },
        Thread { first_record: SUB_NEW, mtime: 50, id: C },
        Thread { first_record: USER, mtime: 20, id: A },
        Thread { first_record: SUB_OLD, mtime: 40, id: B },
    ];
    assert_eq!(pick_thread(&threads), Some(2));
    assert_eq!(pick_thread(&threads[1..2]), None);
    assert_eq!(pick_thread(&[]), None);
}

#[test]
fn the_thread_written_last_wins_over_the_id_minted_last() {
    // A resumed older thread is written after the newer one a `/new` made.
    let threads = [Thread { first_record: USER, mtime: 200, id: A }, Thread { first_record: USER, mtime: 100, id: C }];
    assert_eq!(pick_thread(&threads), Some(0));
}

#[test]
fn an_mtime_tie_goes_to_the_newest_id_in_any_order() {
    let mut threads = [
        Thread { first_record: USER, mtime: 7, id: B },
        Thread { first_record: USER, mtime: 7, id: C },
        Thread { first_record: USER, mtime: 7, id: A },
    ];
    assert_eq!(threads[pick_thread(&threads).unwrap()].id, C);
    threads.reverse();
    assert_eq!(threads[pick_thread(&threads).unwrap()].id, C);
}

#[test]
fn the_lock_route_end_to_end_over_fixture_bytes() {
    let held = held_write_flocks(
        b"1: FLOCK ADVISORY WRITE 4242 00:37:77 0 EOF\n2: FLOCK ADVISORY WRITE 4242 00:37:78 0 EOF\n",
        4242,
    );
    let sub = b"01a22198-0000-7000-8000-000000000001";
    let files: [(&[u8], u64); 2] =
        [(b"01a22198-ee9c-7596-a53d-e97bb5581911.lock", 77), (b"01a22198-0000-7000-8000-000000000001.lock", 78)];
    let ids = locked_threads(&held, &files);
    assert_eq!(ids, [ID, &sub[..]]);
    let listing: [&[u8]; 2] = [NAME, b"rollout-2026-11-28T09-59-00-01a22198-0000-7000-8000-000000000001.jsonl"];
    let found: Vec<_> = ids
        .iter()
        .map(|id| {
            assert_eq!(rollout_day_dirs(uuidv7_ms(id).unwrap())[0], b"sessions/2026/11/28");
            rollout_in_listing(listing, id).unwrap()
        })
        .collect();
    let threads =
        [Thread { first_record: USER, mtime: 1, id: ids[0] }, Thread { first_record: SUB_NEW, mtime: 2, id: ids[1] }];
    assert_eq!(found[pick_thread(&threads).unwrap()], NAME);
}

#[test]
fn the_thread_name_is_the_last_line_for_the_id() {
    let index = br#"{"id":"01a22198-ee9c-7596-a53d-e97bb5581911","thread_name":"first","updated_at":"a"}
{"id":"01a21de2-c3dc-7942-913c-471f190a685b","thread_name":"other","updated_at":"b"}
{"id":"01a22198-ee9c-7596-a53d-e97bb5581911","thread_name":"\u8bf8\u795e","updated_at":"c"}
{"id":"01a22198-ee9c-7596-a53d-e97bb5581911","thread_na"#;
    assert_eq!(thread_name(index, true, ID).unwrap(), "诸神".as_bytes());
    assert_eq!(thread_name(index, true, b"nope"), None);
    assert_eq!(thread_name(&index[10..], false, b"01a21de2-c3dc-7942-913c-471f190a685b").unwrap(), b"other");
    assert_eq!(thread_name(b"", true, ID), None);
}

fn real(dir: &str, name: &str) -> Option<Vec<u8>> {
    let path = format!("{}/../shared/data/transcripts/{dir}/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).ok();
    if bytes.is_none() {
        eprintln!("skipped: no {path}");
    }
    bytes
}

#[test]
fn real_rollouts_say_which_thread_is_a_subagents() {
    let cases = [
        ("cx-0.146.0__world-state-thread-source__motion-jepa.jsonl", false),
        ("cx-0.126.0-alpha.8__spawned-child__cabinet-governance.jsonl", true),
        ("cx-0.126.0-alpha.8__collab-spawn-parent__cabinet-governance.jsonl", false),
        ("cx-0.77.0__review-subagent__0h-n0.jsonl", true),
        ("cx-0.44.0__Arnaud.jsonl", false),
    ];
    for (name, subagent) in cases {
        let Some(bytes) = real("codex", name) else { continue };
        let first = bytes.split(|&b| b == b'\n').next().unwrap();
        assert_eq!(is_subagent_thread(first), subagent, "{name}");
        assert_eq!(is_subagent_thread(&first[..first.len().min(4096)]), subagent, "{name}, first 4 KiB");
    }
}

#[test]
fn real_session_indexes_name_their_threads() {
    let Some(index) = real("codex", "session_index__cabinet-governance.jsonl") else { return };
    let name = thread_name(&index, true, b"019e0ae5-d26a-7eb0-bba3-8aeba9c846c0").unwrap();
    assert_eq!(name, "排查 Chrome 无法联网".as_bytes());
}

fn event(ty: &str) -> String {
    format!(r#"{{"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":{{"type":"{ty}","turn_id":"t"}}}}"#)
}

#[test]
fn a_turn_started_is_busy_and_its_end_or_abort_is_idle() {
    let meta = r#"{"type":"session_meta","payload":{"id":"x"}}"#;
    let rollout = |events: &[&str]| {
        let mut s = format!("{meta}\n");
        for e in events {
            s.push_str(&event(e));
            s.push('\n');
        }
        s
    };
    assert_eq!(turn_status(rollout(&[]).as_bytes(), true), None, "no turn yet: no status");
    assert_eq!(turn_status(rollout(&["task_started"]).as_bytes(), true), Some(&b"busy"[..]));
    assert_eq!(turn_status(rollout(&["task_started", "task_complete"]).as_bytes(), true), Some(&b"idle"[..]));
    assert_eq!(turn_status(rollout(&["task_started", "turn_aborted"]).as_bytes(), true), Some(&b"idle"[..]));
    let again = rollout(&["task_started", "task_complete", "token_count", "task_started"]);
    assert_eq!(turn_status(again.as_bytes(), true), Some(&b"busy"[..]), "the last turn event decides");
}

#[test]
fn a_tail_without_a_turn_event_is_a_turn_still_running() {
    let tail = "utput\"}}\n{\"type\":\"response_item\",\"payload\":{}}\n";
    assert_eq!(turn_status(tail.as_bytes(), false), Some(&b"busy"[..]));
}

#[test]
fn the_real_rollouts_end_idle_or_busy_as_their_last_turn_event_says() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/transcripts/codex");
    let Ok(entries) = std::fs::read_dir(dir) else {
        eprintln!("skipped: no real rollouts at {dir}");
        return;
    };
    let mut seen = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let last = text.lines().rev().filter(|l| l.contains(r#""type":"event_msg""#)).find_map(|l| {
            ["task_started", "task_complete", "turn_aborted"]
                .into_iter()
                .find(|t| l.contains(&format!(r#""payload":{{"type":"{t}""#)))
        });
        let want: Option<&[u8]> = match last {
            Some("task_started") => Some(b"busy"),
            Some(_) => Some(b"idle"),
            None => None,
        };
        assert_eq!(turn_status(&bytes, true), want, "{}", path.display());
        seen += usize::from(want.is_some());
    }
    assert!(seen >= 5, "the real rollouts hold turn events ({seen} did)");
}
