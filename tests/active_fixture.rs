//! /active through the daemon against a fixture `<proc>` (`--proc DIR`):
//! every harness and every route of the ladder as the server runs it —
//! reads through the ring, listings by getdents, readlinks inline — with
//! the hostile cases only a fixture can stage: a FIFO where a registry
//! record should be, a project dir that is a symlink out of the root, a
//! session id that climbs, a helper, a zombie.

mod active_fakes;
mod common;

use std::fs;

use active_fakes::*;
use common::*;

const F: u32 = 1;

fn client(d: &Daemon, cmd: &str, path: &str) -> String {
    let addr = format!("unix!{}", arg(d.socket.as_ref().unwrap()));
    let out = run_client(&d.scratch, &[cmd, "-a", &addr, path], b"");
    assert!(out.status.success(), "9agents {cmd} {path}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_harness_lists_its_agents_and_via_names_each_route_through_the_client() {
    let fx = Fixture::new();
    let agents = fx.populate();
    let d = fx.daemon();
    for h in ["claude", "codex", "dsh", "hermes", "omp"] {
        let want: Vec<String> = agents.iter().filter(|a| a.1 == h).map(|a| a.0.to_string()).collect();
        assert_eq!(client(&d, "ls", &format!("/active/{h}")).lines().collect::<Vec<_>>(), want, "/active/{h}");
    }
    for (pid, h, via) in agents {
        let dir = format!("/active/{h}/{pid}");
        assert_eq!(client(&d, "cat", &format!("{dir}/via")), format!("{via}\n"), "{dir}");
        assert_eq!(client(&d, "cat", &format!("{dir}/pid")), format!("{pid}\n"), "{dir}");
        assert_eq!(client(&d, "cat", &format!("{dir}/ppid")), "1\n", "{dir}");
        assert_eq!(
            client(&d, "cat", &format!("{dir}/started")),
            format!("{}\n", FAKE_BTIME + fake_start(pid) / 100),
            "{dir}"
        );
        assert_eq!(client(&d, "cat", &format!("{dir}/cwd")), format!("{}\n", arg(&fx.cwd)), "{dir}");
    }
}

#[test]
fn each_route_serves_the_fields_its_harness_records() {
    let fx = Fixture::new();
    fx.populate();
    let d = fx.daemon();
    let mut c = d.session(Dialect::P2000);
    let mut cat = |path: &str| String::from_utf8(c.cat(path, F)).unwrap();
    assert_eq!(cat("/active/claude/100/title"), format!("{CLAUDE_TITLE}\n"));
    assert_eq!(cat("/active/claude/100/model"), format!("{CLAUDE_MODEL}\n"));
    assert_eq!(cat("/active/claude/100/status"), "waiting\n");
    assert_eq!(cat("/active/claude/100/name"), "fixture\n");
    assert_eq!(cat("/active/claude/100/zmx"), "fx\n");
    assert_eq!(cat("/active/codex/200/session"), format!("{CODEX_ID}\n"));
    assert_eq!(cat("/active/codex/200/model"), format!("{CODEX_MODEL}\n"));
    assert_eq!(cat("/active/omp/300/title"), "held open\n");
    assert_eq!(cat("/active/omp/300/model"), "claude-opus-4-5\n");
    assert_eq!(cat("/active/omp/301/title"), "from the store\n");
    assert_eq!(cat("/active/omp/301/session"), "01a22279-b4c7-7a46-a6f6-3babbe506400\n");
    assert_eq!(cat("/active/dsh/400/session"), "d22520b1-9324-4d3d-a9a4-26c53c6108af\n");
    // What no record says is absent, not an empty file.
    for absent in
        ["/active/dsh/400/title", "/active/dsh/400/model", "/active/hermes/500/session", "/active/hermes/500/title"]
    {
        assert!(!c.reaches(absent, F), "{absent}");
    }
    let dsh = fx.home().join(".dsh/sessions/session-d22520b1-9324-4d3d-a9a4-26c53c6108af/session.jsonl.zstd");
    assert_eq!(c.cat("/active/dsh/400/transcript", F), fs::read(dsh).unwrap());
    assert!(!c.reaches("/active/hermes/500/transcript", F), "hermes has no transcript");
}

/// Issue 20, item 12: a fact no record gives, or that cannot be read,
/// is no file at all — never an empty one a reader takes for a value.
#[test]
fn an_agent_no_record_names_has_no_name_and_one_whose_cwd_cannot_be_read_no_cwd() {
    let fx = Fixture::new();
    fx.populate();
    // /proc/<pid>/cwd of another user's process is EACCES; here it is gone.
    fs::remove_file(fx.proc.dir.join("200/cwd")).unwrap();
    let d = fx.daemon();
    let mut c = d.session(Dialect::P2000);
    let listed = names(&c.list("/active/codex/200", F, 8192));
    for absent in ["name", "cwd"] {
        assert!(!listed.iter().any(|n| n == absent), "/active/codex/200 lists {absent}: {listed:?}");
        assert!(!c.reaches(&format!("/active/codex/200/{absent}"), F), "{absent}");
    }
    // The agent beside it, whose registry names it and whose cwd reads.
    assert_eq!(c.cat("/active/claude/100/name", F), b"fixture\n");
    assert_eq!(c.cat("/active/claude/100/cwd", F), format!("{}\n", arg(&fx.cwd)).into_bytes());
}

#[test]
fn a_crawl_of_active_reads_every_file_at_the_length_its_listing_gives() {
    let fx = Fixture::new();
    fx.populate();
    let d = fx.daemon();
    let mut c = d.session(Dialect::P2000);
    let crawled = c.crawl("/active");
    let files: Vec<&Crawled> = crawled.iter().filter(|x| x.entry.mode & DMDIR == 0).collect();
    assert!(files.len() > 60, "{} files", files.len());
    for x in files {
        let data = x.data.as_ref().unwrap_or_else(|e| panic!("{}: {e}", x.path));
        assert_eq!(data.len() as u64, x.entry.length, "{}", x.path);
    }
    let agents: Vec<&str> =
        crawled.iter().filter(|x| x.path.matches('/').count() == 3).map(|x| x.path.as_str()).collect();
    assert_eq!(
        agents,
        [
            "/active/claude/100",
            "/active/codex/200",
            "/active/dsh/400",
            "/active/hermes/500",
            "/active/omp/300",
            "/active/omp/301"
        ]
    );
}

#[test]
fn a_codex_holding_only_its_writer_lock_resolves_via_lock() {
    let fx = Fixture::new();
    let rollout = fx.scratch.home_file(
        &format!(".codex/sessions/{CODEX_DAY}/rollout-2025-11-28T10-00-00-{CODEX_ID}.jsonl"),
        codex_rollout(CODEX_ID, &fx.cwd).as_bytes(),
    );
    let lock = fx.scratch.home_file(&format!(".codex/thread-writer-locks/{CODEX_ID}.lock"), b"");
    fx.proc.flock(201, &lock).unwrap();
    fx.proc.add(201, &["codex"], &fx.cwd, b"", &[]);
    let d = fx.daemon();
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.cat("/active/codex/201/via", F), b"lock\n");
    assert_eq!(c.cat("/active/codex/201/transcript", F), fs::read(rollout).unwrap());
}

#[test]
fn a_codex_holding_two_writer_locks_resolves_to_the_rollout_written_last_not_the_id_minted_last() {
    // After `/new` and a resume of the older thread, the process holds
    // both threads' locks; the thread it is in is the one it writes.
    let fx = Fixture::new();
    let minted_later = "019ac9a0-9999-7000-8000-000000000002";
    let mut rollouts = Vec::new();
    for (id, written) in [(CODEX_ID, 2_000_000_000), (minted_later, 1_000_000_000)] {
        let rollout = fx.scratch.home_file(
            &format!(".codex/sessions/{CODEX_DAY}/rollout-2025-11-28T10-00-00-{id}.jsonl"),
            codex_rollout(id, &fx.cwd).as_bytes(),
        );
        let f = fs::File::options().append(true).open(&rollout).unwrap();
        f.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(written)).unwrap();
        let lock = fx.scratch.home_file(&format!(".codex/thread-writer-locks/{id}.lock"), b"");
        fx.proc.flock(201, &lock).unwrap();
        rollouts.push(rollout);
    }
    fx.proc.add(201, &["codex"], &fx.cwd, b"", &[]);
    let d = fx.daemon();
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.cat("/active/codex/201/via", F), b"lock\n");
    assert_eq!(c.cat("/active/codex/201/session", F), format!("{CODEX_ID}\n").as_bytes());
    assert_eq!(c.cat("/active/codex/201/transcript", F), fs::read(&rollouts[0]).unwrap());
}

#[test]
fn a_fifo_where_the_registry_record_should_be_never_blocks_the_daemon() {
    let fx = Fixture::new();
    fx.claude(100, CLAUDE_SID);
    fs::remove_file(fx.home().join(".claude/sessions/100.json")).unwrap();
    fx.scratch.home_fifo(".claude/sessions/100.json");
    let d = fx.daemon();
    let mut c = d.session(Dialect::P2000);
    assert!(listed(&mut c, "claude", F).contains(&"100".to_string()));
    assert_eq!(c.cat("/active/claude/100/via", F), b"none\n");
    assert!(c.try_cat("/active/claude/100/status", F).is_err());
    assert_eq!(c.cat("/pid", F), format!("{}\n", d.pid).as_bytes());
}

#[test]
fn a_project_dir_that_is_a_symlink_out_of_the_root_is_never_read_through() {
    let fx = Fixture::new();
    let real = fx.claude(100, CLAUDE_SID);
    let planted = claude_transcript(&fx.cwd).replace(CLAUDE_TITLE, "planted outside");
    let outside = fx.scratch.outside_file(&format!("project/{CLAUDE_SID}.jsonl"), planted.as_bytes());
    let project = real.parent().unwrap().to_path_buf();
    fs::remove_dir_all(&project).unwrap();
    std::os::unix::fs::symlink(outside.parent().unwrap(), &project).unwrap();
    let d = fx.daemon();
    let mut c = d.session(Dialect::P2000);
    assert!(listed(&mut c, "claude", F).contains(&"100".to_string()));
    assert!(!c.reaches("/active/claude/100/title", F), "no title is read through the link");
    assert!(c.try_cat("/active/claude/100/transcript", F).is_err(), "the transcript was read through a symlink");
    let crawled = c.crawl("/active/claude");
    assert!(crawled.iter().all(|x| x.data.as_ref().map_or(true, |d| !contains(d, b"planted outside"))));
}

#[test]
fn a_registry_session_id_that_climbs_out_is_refused() {
    let fx = Fixture::new();
    fx.claude(100, CLAUDE_SID);
    fx.scratch.outside_file("x.jsonl", claude_transcript(&fx.cwd).as_bytes());
    for sid in ["../../../outside/x", "a/b", ".."] {
        let record = format!(r#"{{"pid":100,"sessionId":"{sid}","cwd":"{}","status":"busy"}}"#, arg(&fx.cwd));
        fx.scratch.home_file(".claude/sessions/100.json", record.as_bytes());
        let d = fx.daemon();
        let mut c = d.session(Dialect::P2000);
        assert!(listed(&mut c, "claude", F).contains(&"100".to_string()), "{sid}");
        assert_eq!(c.cat("/active/claude/100/via", F), b"none\n", "{sid}");
        assert!(!c.reaches("/active/claude/100/transcript", F), "{sid}");
    }
}

#[test]
fn helpers_zombies_and_other_programs_are_not_listed() {
    let fx = Fixture::new();
    fx.proc.add(101, &["claude", "mcp", "serve"], &fx.cwd, b"", &[]);
    fx.proc.add(102, &["codex", "app-server"], &fx.cwd, b"", &[]);
    fx.proc.add(103, &["python3", "-m", "hermes_cli.main", "dashboard"], &fx.cwd, b"", &[]);
    fx.proc.add(104, &["node", "/usr/lib/claude/cli.js"], &fx.cwd, b"", &[]);
    fx.proc.add(105, &["claude"], &fx.cwd, b"", &[]);
    let stat = fs::read_to_string(fx.proc.dir.join("105/stat")).unwrap().replace(" S 1 ", " Z 1 ");
    fs::write(fx.proc.dir.join("105/stat"), stat).unwrap();
    let d = fx.daemon();
    let mut c = d.session(Dialect::P2000);
    for h in ["claude", "codex", "dsh", "hermes", "omp"] {
        assert_eq!(listed(&mut c, h, F), Vec::<String>::new(), "/active/{h}");
    }
}

/// docs/ACTIVE.md: omp names its store relative to `$HOME` resolved, so
/// the daemon must resolve its own `$HOME` before comparing it with a
/// cwd, which `/proc` always spells resolved.
#[test]
fn omp_finds_its_store_when_home_is_reached_through_a_symlink() {
    let fx = Fixture::new();
    fx.omp_transcript("-src-app", "01a22279-b4c7-7a46-a6f6-3babbe506400", "from the store");
    fx.proc.add(301, &["omp"], &fx.cwd, b"", &[]);
    let link = fx.scratch.root.join("home-link");
    std::os::unix::fs::symlink(&fx.scratch.home, &link).unwrap();
    let d = Daemon::start_in_env(&fx.scratch, &["--proc", arg(&fx.proc.dir)], &[("HOME", arg(&link))]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.cat("/active/omp/301/via", F), b"dir\n");
    assert_eq!(c.cat("/active/omp/301/title", F), b"from the store\n");
}

/// A process table that cannot be listed is not an empty machine: the
/// listing that needed the scan answers an error, never an empty list.
#[test]
fn a_proc_dir_that_cannot_be_listed_answers_an_error_not_an_empty_listing() {
    let s = Scratch::new();
    let missing = s.root.join("no-such-proc");
    let d = Daemon::start_in(&s, &["--proc", missing.to_str().unwrap()]);
    let mut c = d.session(Dialect::P2000u);
    c.walk_path("/active/claude", 1).qids();
    let (text, errno) = c.open(1, OREAD).error().expect("the listing must fail, not come back empty");
    assert_eq!((text.as_str(), errno), ("i/o error", libc::EIO as u32));
}

#[test]
fn a_fixture_agent_whose_pid_is_the_daemons_own_is_listed() {
    // A fixture's pids name no process of this machine: the daemon is not
    // among them, so its own pid (and ancestry) excludes nothing there.
    // The kernel test's guest hit this: its daemon's real pid was the
    // fixture agent's, and the agent never appeared.
    let fx = Fixture::new();
    let d = fx.daemon();
    fx.claude(d.pid, CLAUDE_SID);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(listed(&mut c, "claude", F), [d.pid.to_string()]);
    assert_eq!(
        String::from_utf8(c.cat(&format!("/active/claude/{}/session", d.pid), F)).unwrap(),
        format!("{CLAUDE_SID}\n")
    );
}

/// Issue 21, defect 8: a rescan reads the command lines of the processes
/// it has not judged, not of every process; a process judged not to be an
/// agent that then execs into one (the same pid, the same `<proc>`
/// entry) is judged again, and listed, within seconds.
#[test]
fn a_process_that_execs_into_an_agent_after_it_was_judged_is_listed_soon() {
    let fx = Fixture::new();
    fx.claude(500, "00000000-0000-4000-8000-000000000500");
    fx.proc.add(501, &["bash", "-l"], &fx.cwd, b"", &[]);
    let d = fx.daemon();
    assert_eq!(client(&d, "ls", "/active/claude"), "500\n");
    // 501 execs: its command line changes in place.
    fs::write(fx.proc.dir.join("501/cmdline"), b"claude\0").unwrap();
    let record = format!(
        r#"{{"pid":501,"sessionId":"00000000-0000-4000-8000-000000000501","cwd":"{}","procStart":"{}","status":"idle","name":"exec"}}"#,
        arg(&fx.cwd),
        fake_start(501)
    );
    fx.scratch.home_file(".claude/sessions/501.json", record.as_bytes());
    let listed = poll(std::time::Duration::from_secs(10), || {
        Some(()).filter(|()| client(&d, "ls", "/active/claude") == "500\n501\n")
    });
    assert!(listed.is_some(), "the exec'd process was never listed: {}", client(&d, "ls", "/active/claude"));
}
