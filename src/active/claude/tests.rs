use super::*;

const LINUX: &[u8] = br#"{"pid":409825,"sessionId":"c3fb74ec-8b9d-4142-954c-4bdf1a77f7f1","cwd":"/home/vansin/agent-orchestra","startedAt":1778572448459,"procStart":"20095994","version":"2.1.139","peerProtocol":1,"kind":"interactive","entrypoint":"cli","status":"busy","updatedAt":1778681861222,"name":"\u901a\u4fe1SDK\u9a6c"}"#;

#[test]
fn a_linux_record_yields_every_field() {
    let reg = parse_registry(LINUX).unwrap();
    assert_eq!(reg.session_id, b"c3fb74ec-8b9d-4142-954c-4bdf1a77f7f1");
    assert_eq!(reg.cwd, b"/home/vansin/agent-orchestra");
    assert_eq!(reg.status.as_deref(), Some(&b"busy"[..]));
    assert_eq!(reg.name.as_deref(), Some("通信SDK马".as_bytes()));
    assert_eq!(reg.proc_start, ProcStart::Ticks(20095994));
    assert_eq!(reg.pid, Some(409825));
    assert_eq!(check_registry(&reg, 409825, 20095994), Ok(()));
}

#[test]
fn a_reused_pid_fails_the_procstart_check() {
    let reg = parse_registry(LINUX).unwrap();
    assert_eq!(check_registry(&reg, 409825, 20095995), Err(Why::ProcStartMismatch));
}

#[test]
fn a_record_naming_another_pid_is_refused() {
    let reg = parse_registry(LINUX).unwrap();
    assert_eq!(check_registry(&reg, 409826, 20095994), Err(Why::PidMismatch));
}

#[test]
fn a_record_without_procstart_or_status_is_still_read() {
    let reg = parse_registry(br#"{"sessionId":"a-b_C","cwd":"/x"}"#).unwrap();
    assert_eq!((reg.proc_start, &reg.status, &reg.name, reg.pid), (ProcStart::Absent, &None, &None, None));
    assert_eq!(check_registry(&reg, 1, 2), Ok(()));
}

#[test]
fn a_procstart_written_as_a_number_is_read_too() {
    let reg = parse_registry(br#"{"sessionId":"s","cwd":"/x","procStart":42}"#).unwrap();
    assert_eq!(reg.proc_start, ProcStart::Ticks(42));
}

#[test]
fn a_procstart_from_another_os_is_never_believed() {
    let mac = br#"{"sessionId":"s","cwd":"/x","procStart":"Sun May  3 00:17:02 2026"}"#;
    let reg = parse_registry(mac).unwrap();
    assert_eq!(reg.proc_start, ProcStart::Foreign);
    assert_eq!(check_registry(&reg, 1, 0), Err(Why::ProcStartForeign));
    let huge = br#"{"sessionId":"s","cwd":"/x","procStart":"99999999999999999999999"}"#;
    assert_eq!(parse_registry(huge).unwrap().proc_start, ProcStart::Foreign);
}

#[test]
fn a_session_id_that_could_climb_out_is_refused() {
    for sid in [r#""../../etc/passwd""#, r#""a/b""#, r#""..""#, r#""""#, r#""a\u002fb""#, r#""a\u0000""#, "42", "null"]
    {
        let rec = format!(r#"{{"sessionId":{sid},"cwd":"/x"}}"#);
        assert_eq!(parse_registry(rec.as_bytes()), Err(Why::BadSessionId), "{sid}");
    }
}

#[test]
fn a_record_that_is_not_json_is_refused() {
    for bad in [
        &b""[..],
        b"not json",
        b"[1,2]",
        b"\"str\"",
        br#"{"sessionId":"s","cwd":"/x""#,
        b"{\"sessionId\":\"s\"} trailing",
    ] {
        assert_eq!(parse_registry(bad), Err(Why::NotJson), "{:?}", String::from_utf8_lossy(bad));
    }
    assert_eq!(parse_registry(b"\xff\xfe{\x00}"), Err(Why::NotJson));
    assert_eq!(parse_registry(b"{}"), Err(Why::NoSessionId));
    assert_eq!(parse_registry(b"{\"sessionId\":\"\xc3\xa9\",\"cwd\":\"/x\"}"), Err(Why::BadSessionId));
    assert_eq!(parse_registry(br#"{"sessionId":"s"}"#), Err(Why::NoCwd));
}

#[test]
fn a_cwd_that_cannot_be_a_path_is_refused() {
    let long = format!(r#"{{"sessionId":"s","cwd":"/{}"}}"#, "a".repeat(PATH_BYTES_MAX));
    for rec in [
        r#"{"sessionId":"s","cwd":""}"#,
        r#"{"sessionId":"s","cwd":"/a\u0000b"}"#,
        r#"{"sessionId":"s","cwd":7}"#,
        &long,
    ] {
        assert_eq!(parse_registry(rec.as_bytes()), Err(Why::BadCwd), "{rec}");
    }
}

#[test]
fn a_status_that_is_not_one_word_is_dropped_not_served() {
    let rec = br#"{"sessionId":"s","cwd":"/x","status":"busy\nfake: field"}"#;
    assert_eq!(parse_registry(rec).unwrap().status, None);
    let rec = br#"{"sessionId":"s","cwd":"/x","status":{"state":"busy"}}"#;
    assert_eq!(parse_registry(rec).unwrap().status, None);
}

#[test]
fn a_long_name_is_cut_at_a_character() {
    let rec = format!(r#"{{"sessionId":"s","cwd":"/x","name":"{}"}}"#, "中".repeat(100));
    let name = parse_registry(rec.as_bytes()).unwrap().name.unwrap();
    assert_eq!(name.len(), 255);
    assert!(std::str::from_utf8(&name).is_ok());
}

#[test]
fn the_project_dir_keeps_letters_and_digits_only() {
    assert_eq!(claude_project_dir(b"/home/demo/src/9agents"), ProjectDir::Exact(b"-home-demo-src-9agents".to_vec()));
    assert_eq!(claude_project_dir(b"/home/u/my_proj.v2"), ProjectDir::Exact(b"-home-u-my-proj-v2".to_vec()));
    assert_eq!(claude_project_dir(b"/a/../b"), ProjectDir::Exact(b"-a----b".to_vec()));
}

#[test]
fn the_project_dir_counts_utf16_units_as_javascript_does() {
    assert_eq!(claude_project_dir("/home/u/文档".as_bytes()), ProjectDir::Exact(b"-home-u---".to_vec()));
    assert_eq!(claude_project_dir("/é/😀".as_bytes()), ProjectDir::Exact(b"-----".to_vec()));
    assert_eq!(claude_project_dir(b"/a\xff\xfeb"), ProjectDir::Exact(b"-a--b".to_vec()));
}

#[test]
fn a_long_cwd_names_its_dir_by_prefix_and_the_hash_is_left_to_the_listing() {
    let cwd = format!("/{}", "x".repeat(250));
    let ProjectDir::Long { prefix } = claude_project_dir(cwd.as_bytes()) else { panic!("not long") };
    assert_eq!(prefix.len(), PROJECT_DIR_UNITS_MAX);
    let exact = format!("/{}", "x".repeat(199));
    assert!(matches!(claude_project_dir(exact.as_bytes()), ProjectDir::Exact(d) if d.len() == 200));
    let name = [&prefix[..], b"-1x2ab9"].concat();
    assert!(long_dir_matches(&name, &prefix));
    assert!(!long_dir_matches(&prefix, &prefix));
    assert!(!long_dir_matches(&[&prefix[..], b"-"].concat(), &prefix));
    assert!(!long_dir_matches(&[&prefix[..], b"-a/b"].concat(), &prefix));
}

#[test]
fn the_transcript_path_is_built_only_from_plain_names() {
    assert_eq!(transcript_rel(b"-home-u", b"abc-1").unwrap(), b"projects/-home-u/abc-1.jsonl");
    assert_eq!(transcript_rel(b"-home-u", b"../x"), None);
    assert_eq!(transcript_rel(b"..", b"abc"), None);
    assert_eq!(transcript_rel(b"", b"abc"), None);
    assert_eq!(transcript_rel(b"a/b", b"abc"), None);
}

/// The registry records under `shared/data/transcripts/claude`, copied
/// byte for byte from real machines; absent in a checkout without them.
fn real_records() -> Option<Vec<(String, Vec<u8>)>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/transcripts/claude");
    let Ok(entries) = std::fs::read_dir(dir) else {
        eprintln!("skipped: no real registry records at {dir}");
        return None;
    };
    let mut out: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("sessions-pid__") && n.ends_with(".json"))
        .filter_map(|n| Some((n.clone(), std::fs::read(format!("{dir}/{n}")).ok()?)))
        .collect();
    out.sort();
    Some(out)
}

#[test]
fn the_real_records_parse_and_only_foreign_clocks_are_refused() {
    let Some(records) = real_records() else { return };
    for (name, bytes) in &records {
        let reg = parse_registry(bytes).unwrap_or_else(|e| panic!("{name}: {}", e.as_str()));
        let pid: u32 = name.split("__").nth(1).unwrap().parse().unwrap();
        assert_eq!(reg.pid, Some(u64::from(pid)), "{name}");
        assert!(is_session_id(&reg.session_id), "{name}");
        let checked = check_registry(&reg, pid, 12345);
        match reg.proc_start {
            ProcStart::Absent => assert_eq!(checked, Ok(()), "{name}"),
            ProcStart::Ticks(_) => assert_eq!(checked, Err(Why::ProcStartMismatch), "{name}"),
            ProcStart::Foreign => assert_eq!(checked, Err(Why::ProcStartForeign), "{name}"),
        }
    }
}

#[test]
fn the_real_records_keep_status_and_name_where_they_have_them() {
    let Some(records) = real_records() else { return };
    let get = |part: &str| records.iter().find(|(n, _)| n.contains(part)).map(|(_, b)| parse_registry(b).unwrap());
    if let Some(reg) = get("bridge-name") {
        assert_eq!((reg.name.as_deref(), reg.status.as_deref()), (Some(&b"phase3"[..]), None));
        assert_eq!(reg.proc_start, ProcStart::Absent);
    }
    if let Some(reg) = get("windows-status") {
        assert_eq!(reg.status.as_deref(), Some(&b"idle"[..]));
        assert_eq!(reg.cwd, br"X:\03_ACG\Odoo_Docs");
    }
    if let Some(reg) = get("macos-status") {
        assert_eq!(reg.proc_start, ProcStart::Foreign);
    }
}

#[test]
fn fuzzed_records_never_panic() {
    let mut x: u64 = 0x1234_5678_9abc_def1;
    let spice = b"{}[]\":,\\u0123/.-aZ \x00\xff";
    for _ in 0..20_000 {
        let mut rec = LINUX.to_vec();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = (x as usize) % rec.len();
            match x % 3 {
                0 => rec[at] = spice[(x >> 20) as usize % spice.len()],
                1 => rec.truncate(at.max(1)),
                _ => rec.insert(at, spice[(x >> 24) as usize % spice.len()]),
            }
        }
        if let Ok(reg) = parse_registry(&rec) {
            assert!(is_session_id(&reg.session_id));
            let _ = check_registry(&reg, 409825, 20095994);
            let _ = claude_project_dir(&reg.cwd);
        }
    }
}

#[test]
fn a_fifo_where_the_record_should_be_reads_as_nothing_and_is_refused() {
    // The server never reads a FIFO (it opens records O_NONBLOCK and reads
    // regular files only); what reaches this function is an empty buffer.
    assert_eq!(parse_registry(b""), Err(Why::NotJson));
    assert_eq!(parse_registry(b"   \n"), Err(Why::NotJson));
}
