use super::*;

fn cmdline(argv: &[&str]) -> Vec<u8> {
    argv.iter().flat_map(|a| a.bytes().chain([0])).collect()
}

#[test]
fn argv0_basename_names_the_harness() {
    let cases = [
        (&["claude"][..], Some(Harness::Claude)),
        (&["/home/u/.local/bin/claude", "--resume"], Some(Harness::Claude)),
        (&["codex", "--model", "gpt-5.5"], Some(Harness::Codex)),
        (&["/usr/bin/omp"], Some(Harness::Omp)),
        (&["hermes", "chat"], Some(Harness::Hermes)),
        (&["dsh"], Some(Harness::Dsh)),
        (&["claude-code"], None),
        (&["/opt/claude/bin/node", "cli.js"], None),
        (&["bash", "-c", "claude"], None),
    ];
    for (argv, want) in cases {
        assert_eq!(classify(&cmdline(argv)), want, "{argv:?}");
    }
}

#[test]
fn a_daemon_word_anywhere_after_argv0_makes_a_helper() {
    for argv in [
        &["claude", "mcp", "serve"][..],
        &["codex", "app-server"],
        &["codex", "--listen", "x", "exec-server"],
        &["omp", "__omp_worker_daemon_broker"],
        &["hermes", "gateway", "run"],
        &["hermes", "dashboard"],
        &["dsh", "daemon"],
        &["python3", "-m", "hermes_cli.main", "gateway"],
    ] {
        assert_eq!(classify(&cmdline(argv)), None, "{argv:?}");
    }
}

#[test]
fn daemon_words_match_whole_arguments_and_never_argv0() {
    assert_eq!(classify(&cmdline(&["/srv/serve/bin/claude"])), Some(Harness::Claude));
    assert_eq!(classify(&cmdline(&["claude", "--servers"])), Some(Harness::Claude));
    assert_eq!(classify(&cmdline(&["claude", "mcp-config.json"])), Some(Harness::Claude));
    assert_eq!(classify(&cmdline(&["serve"])), None);
}

#[test]
fn a_python_running_hermes_is_hermes() {
    for argv in [
        &["python3", "-m", "hermes_cli.main"][..],
        &["/usr/bin/python3.11", "-u", "-mhermes_cli.main", "chat"],
        &["python", "-W", "ignore", "-m", "hermes_cli.main"],
        &["python3", "/opt/hermes/hermes_cli/main.py"],
        &["python3", "/home/u/.local/bin/hermes"],
        &["python3", "-X", "dev", "--", "/x/hermes_cli.main"],
    ] {
        assert_eq!(classify(&cmdline(argv)), Some(Harness::Hermes), "{argv:?}");
    }
}

#[test]
fn a_python_running_anything_else_is_not() {
    for argv in [
        &["python3"][..],
        &["python3", "-c", "import hermes_cli.main"],
        &["python3", "-m", "http.server"],
        &["python3", "script.py", "hermes_cli.main"],
        &["python3", "-m"],
        &["pythonista", "-m", "hermes_cli.main"],
        &["python3-config", "-m", "hermes_cli.main"],
    ] {
        assert_eq!(classify(&cmdline(argv)), None, "{argv:?}");
    }
}

#[test]
fn an_empty_or_odd_cmdline_is_not_an_agent() {
    for raw in [&b""[..], b"\0", b"\0\0claude\0", b"claude\0\0\0\0"] {
        let want = if raw.starts_with(b"claude") { Some(Harness::Claude) } else { None };
        assert_eq!(classify(raw), want);
    }
    assert_eq!(classify(b"claude"), Some(Harness::Claude));
    assert_eq!(classify(b"\xff\xfe\0mcp\0"), None);
}

const STAT: &[u8] = b"23516 (cat) R 23514 23514 26361 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 136749 3133440 393 18446744073709551615 94518292860928 0\n";

#[test]
fn pid_stat_yields_ppid_and_starttime() {
    let s = parse_pid_stat(STAT).unwrap();
    assert_eq!((s.pid, s.comm, s.state, s.ppid, s.starttime_ticks), (23516, &b"cat"[..], b'R', 23514, 136749));
}

#[test]
fn a_comm_holding_spaces_and_parens_does_not_shift_the_fields() {
    let stat = b"7 (a) b) (c ) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 424242 0 0";
    let s = parse_pid_stat(stat).unwrap();
    assert_eq!((s.comm, s.ppid, s.starttime_ticks), (&b"a) b) (c "[..], 1, 424242));
}

#[test]
fn a_malformed_stat_is_none() {
    for bad in [
        &b""[..],
        b"garbage",
        b"7 (x",
        b"7 x) S 1",
        b"(x) S 1 2 3",
        b"7 (x) S",
        b"7 (x) S -1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42",
        b"7 (x) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0",
        b"7 (x) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99999999999999999999999",
        b"99999999999 (x) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42",
        b"7 (x) SS 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42",
        b")7 (x S 1",
    ] {
        assert_eq!(parse_pid_stat(bad), None, "{:?}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn btime_comes_from_its_own_line() {
    let stat = b"cpu  1 2 3\nintr 5\nbtime 1795981893\nprocesses 9\n";
    assert_eq!(parse_btime(stat), Some(1795981893));
    assert_eq!(parse_btime(b"cpu 1\nxbtime 5\n"), None);
    assert_eq!(parse_btime(b"btime 99999999999999999999999\n"), None);
    assert_eq!(parse_btime(b""), None);
}

#[test]
fn started_is_boot_time_plus_ticks_at_a_hundred_a_second() {
    assert_eq!(started(1_795_981_893, 136_749), 1_795_981_893 + 1_367);
    assert_eq!(started(u64::MAX, u64::MAX), u64::MAX);
}

#[test]
fn a_reused_pid_is_another_process() {
    assert!(is_same_process(136749, STAT));
    assert!(!is_same_process(136748, STAT));
    assert!(!is_same_process(136749, b""));
}

#[test]
fn a_zombie_is_a_corpse_not_an_agent() {
    let zombie = b"7 (claude) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0";
    assert!(!is_same_process(42, zombie));
}

#[test]
fn an_environment_answers_by_whole_key() {
    let env = b"PATH=/usr/bin\0ZMX_SESSION_X=no\0ZMX_SESSION=harness\0ZMX_SESSION=second\0EMPTY=\0";
    assert_eq!(env_value(env, b"ZMX_SESSION"), Some(&b"harness"[..]));
    assert_eq!(env_value(env, b"ZMX"), None);
    assert_eq!(env_value(env, b"EMPTY"), Some(&b""[..]));
    assert_eq!(env_value(env, b"MISSING"), None);
    assert_eq!(env_value(env, b""), None);
    assert_eq!(env_value(env, b"PATH=/usr"), None);
    assert_eq!(env_value(b"", b"ZMX_SESSION"), None);
    assert_eq!(env_value(b"ZMX_SESSION", b"ZMX_SESSION"), None);
    assert_eq!(env_value(b"ZMX_SESSION=a=b", b"ZMX_SESSION"), Some(&b"a=b"[..]));
}
