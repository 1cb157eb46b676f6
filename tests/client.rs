//! The built-in client: `9agents ls|cat|stat|write`, dialling the posted
//! name by default or `-a ADDR`.

mod common;

use std::process::Output;

use common::*;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A daemon posted as `agents` in a scratch world.
fn posted() -> Daemon {
    Daemon::posted(&Scratch::new(), &[])
}

#[test]
fn ls_of_the_root_lists_readme_pid_and_uptime() {
    let d = posted();
    let out = d.client(&["ls", "/"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<String> = stdout(&out).lines().map(String::from).collect();
    for name in ["README", "pid", "uptime"] {
        assert!(lines.contains(&name.to_string()), "{name} not in {lines:?}");
    }
}

#[test]
fn ls_l_shows_read_only_modes() {
    let d = posted();
    let out = d.client(&["ls", "-l", "/"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let readme = text.lines().find(|l| l.ends_with(" README")).unwrap_or_else(|| panic!("no README line in:\n{text}"));
    assert!(readme.starts_with("--r--r--r--"), "{readme}");
    assert!(readme.contains(&format!(" {} ", nineagents::tree::README.len())), "{readme}");
}

#[test]
fn ls_of_a_file_names_the_file() {
    let d = posted();
    let out = d.client(&["ls", "/pid"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "pid");
}

#[test]
fn cat_of_pid_prints_the_daemons_pid() {
    let d = posted();
    let out = d.client(&["cat", "/pid"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{}\n", d.pid));
}

#[test]
fn cat_of_readme_prints_it_byte_for_byte() {
    let d = posted();
    let out = d.client(&["cat", "/README"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout, readme());
}

#[test]
fn cat_of_a_missing_file_prints_the_servers_error_and_fails() {
    let d = posted();
    let out = d.client(&["cat", "/nosuch"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("file does not exist"), "{}", stderr(&out));
}

#[test]
fn stat_of_readme_prints_its_name_mode_and_length() {
    let d = posted();
    let out = d.client(&["stat", "/README"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("README"), "{text}");
    assert!(text.contains(&nineagents::tree::README.len().to_string()), "{text}");
    assert!(text.contains("444"), "{text}");
}

#[test]
fn write_is_refused_and_exits_non_zero() {
    let d = posted();
    let out = d.client_with_stdin(&["write", "/README"], b"scribble\n");
    assert!(!out.status.success());
    assert!(stderr(&out).contains(READ_ONLY), "{}", stderr(&out));
}

#[test]
fn a_refused_write_changes_nothing() {
    let d = posted();
    d.client_with_stdin(&["write", "/README"], b"scribble\n");
    assert_eq!(d.client(&["cat", "/README"]).stdout, readme());
}

#[test]
fn a_unix_address_reaches_an_unposted_daemon() {
    let d = Daemon::start(&[]);
    let addr = format!("unix!{}", arg(d.socket.as_ref().unwrap()));
    let out = d.client(&["cat", "-a", &addr, "/pid"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{}\n", d.pid));
}

#[test]
fn a_tcp_address_reaches_a_tcp_daemon() {
    let d = Daemon::start_tcp(&[]);
    let addr = format!("tcp!127.0.0.1!{}", d.tcp.unwrap().port());
    let out = d.client(&["ls", "-a", &addr, "/"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).lines().any(|l| l == "README"), "{}", stdout(&out));
}

#[test]
fn a_posted_name_other_than_agents_is_dialled_by_name() {
    let scratch = Scratch::new();
    let d = Daemon::posted(&scratch, &["--name", "elsewhere"]);
    let out = d.client(&["cat", "-a", "elsewhere", "/pid"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{}\n", d.pid));
}

#[test]
fn with_no_daemon_the_client_fails() {
    let scratch = Scratch::new();
    let out = run_client(&scratch, &["ls", "/"], b"");
    assert!(!out.status.success());
    assert!(!stderr(&out).is_empty());
}

#[test]
fn a_client_usage_error_exits_2() {
    let scratch = Scratch::new();
    let out = run_client(&scratch, &["cat"], b"");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
