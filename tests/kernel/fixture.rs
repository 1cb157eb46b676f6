//! The homes the guest's daemons serve, generated on the host into the
//! initramfs's staging directory at the paths they will have inside the
//! guest (a fake `<proc>`'s links and a registry record's cwd name guest
//! paths), with what the guest compares against.
//!
//! Three homes, three daemons: the **light** one (`/fx/light`) is small enough
//! that `ls -lR` of the whole mount, `cat` of every file and every refusal
//! run in seconds, and holds the credential-shaped names that must stay
//! invisible and one claude agent whose transcript the guest appends to;
//! the **heavy** one (`/fx/heavy`) holds a 5,000-file directory and an
//! agent with a 40,000-message chat, which only the heavy checks list; the
//! **move** one (`/fx/move`) is a home whose transcript resolves an agent
//! the guest starts (the probe, run as `claude`: a real process of the
//! guest's `/proc`, which a move ends), and the fake zmx the move runs.
//! The diod bench (`bench/diod.rs`) includes this file too, for `agent`
//! (its own home's agent is made the same way). Nothing here is committed: a
//! 40,000-message chat is made, not stored.
//!
//! The guest's expectations are files beside each home, written from what
//! this module made, never from the daemon's exclusion rules (which would
//! make the check agree with itself):
//!
//! | file | lines |
//! |---|---|
//! | `manifest` | `T\tSIZE\tMTIME\tTREE\tDISK`: every entry the mirrors must show (`d` or `f`), its tree path and the guest file it mirrors |
//! | `paths` | `T TREE`, the manifest's entries as `probe tree` prints them |
//! | `mounts` | the tree paths the mirrors start at (the listing is compared below them) |
//! | `hidden` | tree paths of the credential-shaped entries, which must not exist |
//! | `chat/NAME`, `chat.names` | each message the agent's `chat/` must serve, and their names |
//! | `parallel` | `TREE\tEXPECTED`: what the 16 parallel readers read, and the file it must equal |
//! | `append-VERSION`, `append-VERSION.want` | the transcript line the guest appends over that dialect, and the message it must become |
//!
//! and `/fx/env`, a shell file the guest's init sources, names the rest.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use crate::active_fakes::{claude_project_dir, codex_rollout, fake_start, FakeProc, CODEX_DAY, CODEX_ID};
use crate::chat_fakes::*;
use crate::common::{MOUNTS, SECRET};
use crate::guest::Stage;

/// Where each home's world lives in the guest.
pub(crate) const LIGHT: &str = "/fx/light";
pub(crate) const HEAVY: &str = "/fx/heavy";
/// The agent's pid in each world's fake `<proc>`.
pub(crate) const AGENT_PID: u32 = 100;
/// The session both agents are in (each in its own home).
pub(crate) const SID: &str = "5f1c7a52-3b4e-4d61-9a0b-2c8e7f6d1a90";
/// The heavy directory's files: over 5,000 entries a 9P2000.u listing is
/// several hundred KB, far past the ~128 KB the kernel's first readdir
/// buffers hold.
pub(crate) const HEAVY_FILES: usize = 5_000;
/// The heavy chat's messages: a long real session's size.
pub(crate) const HEAVY_MESSAGES: u64 = 40_000;
/// Files the guest holds open at once: thousands, and under the daemon's
/// `OPEN_FILES_MAX` (4,096 held fds), past which an open is refused by
/// design rather than by defect.
pub(crate) const HOLD_FILES: usize = 4_000;
/// The dialects the guest mounts with, as `version=` spells them; 9P2000.L
/// is the kernel's default, mounted with no `version=` at all.
pub(crate) const VERSIONS: [&str; 3] = ["9p2000.L", "9p2000.u", "9p2000"];
/// The dialects the 40,000-message `ls -l` runs on: it takes over a minute
/// a dialect under TCG, and plain 9P2000 lists it through the same code as
/// 9P2000.u (one stat a message), so it is left out there to keep the run
/// near 6 minutes.
const HEAVY_CHAT_VERSIONS: [&str; 2] = ["9p2000.L", "9p2000.u"];
/// The dialects a name written into `zmx` moves an agent through (a fresh
/// agent each): the default mount with `echo NAME > zmx`, and 9P2000.u with
/// an open that does not truncate (a .u truncate is a wstat, refused).
const MOVE_VERSIONS: [&str; 2] = ["9p2000.L", "9p2000.u"];
/// Who owns the light home in the guest (it is chowned there): not the
/// daemon (root), so a stat that shows the daemon's owner for a mirrored
/// file is caught.
const LIGHT_UID: u32 = 1000;
const LIGHT_GID: u32 = 1001;
/// The move daemon's world: its HOME, XDG_RUNTIME_DIR (the zmx registry is
/// `9p/zmx` below it) and the agent's cwd.
const MOVE: &str = "/fx/move";
const MOVE_RUNTIME: &str = "/run/mover-rt";
/// Where the fake zmx and the fake agent (the probe, run as `claude`) are.
pub(crate) const MOVE_ZMX: &str = "/fx/move/zmx";
pub(crate) const MOVE_AGENT: &str = "/fx/move/bin/claude";
/// The first mtime the light home's entries get; each entry another.
const MTIME_BASE: u64 = 1_700_000_000;
/// The large file: more than one msize, not a multiple of a page.
const LARGE_BYTES: usize = (1 << 20) + 4_097;

/// The three worlds, and `/fx/env`.
pub(crate) fn build(stage: &Stage) {
    let light = light(stage);
    let heavy = heavy(stage);
    let mover = mover(stage);
    let env = format!(
        "# Written by tests/kernel/fixture.rs.\n\
         LIGHT={LIGHT}\nHEAVY={HEAVY}\nAGENT_PID={AGENT_PID}\nVERSIONS='{}'\nHEAVY_CHAT_VERSIONS='{}'\n\
         LIGHT_UID={LIGHT_UID}\nLIGHT_GID={LIGHT_GID}\nMOVE_VERSIONS='{}'\n{mover}\
         TRANSCRIPT_TREE='{}'\nTRANSCRIPT='{}'\n\
         HEAVY_DIR_TREE='claude/projects/big'\nHEAVY_DIR='{HEAVY}/home/.claude/projects/big'\n\
         HEAVY_FILES={HEAVY_FILES}\nHEAVY_MESSAGES={HEAVY_MESSAGES}\nHOLD_FILES={HOLD_FILES}\n\
         SECRET='{}'\nHEAVY_TRANSCRIPT_BYTES={}\n",
        VERSIONS.join(" "),
        HEAVY_CHAT_VERSIONS.join(" "),
        MOVE_VERSIONS.join(" "),
        light.transcript_tree,
        light.transcript,
        std::str::from_utf8(SECRET).unwrap(),
        heavy,
    );
    stage.write("/fx/env", env.as_bytes());
}

/// What the light world's builder tells `/fx/env`.
struct Light {
    transcript_tree: String,
    transcript: String,
}

/// The light home: every kind of file a mirror serves, the
/// credential-shaped names, and a claude agent with a small chat.
fn light(stage: &Stage) -> Light {
    let home = format!("{LIGHT}/home");
    let cwd = format!("{home}/src/app");
    stage.mkdir(&cwd);
    let project = claude_project_dir(Path::new(&cwd));
    let transcript_rel = format!(".claude/projects/{project}/{SID}.jsonl");
    let (chat_body, chat) = light_chat();
    let rollout = format!(".codex/sessions/{CODEX_DAY}/rollout-2025-11-28T10-00-00-{CODEX_ID}.jsonl");
    let binary: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
    let visible: Vec<(String, Vec<u8>)> = vec![
        (".claude/history.jsonl".into(), b"{\"display\":\"list the files\",\"timestamp\":1764334286000}\n".to_vec()),
        (transcript_rel.clone(), chat_body),
        (".claude/projects/p/empty".into(), Vec::new()),
        (".claude/projects/p/small.txt".into(), b"small\n".to_vec()),
        (".claude/projects/p/binary.bin".into(), binary),
        (".claude/projects/p/large.bin".into(), pseudo_random(LARGE_BYTES)),
        (".claude/projects/p/name with spaces.txt".into(), b"spaces\n".to_vec()),
        (".claude/projects/p/\u{e9}t\u{e9} \u{2713}.md".into(), "\u{e9}t\u{e9} \u{2713}\n".as_bytes().to_vec()),
        (".claude/projects/p/sub/deeper/leaf.txt".into(), b"a leaf, three below the mount\n".to_vec()),
        (".claude/skills/review/SKILL.md".into(), b"---\nname: review\n---\nRead the diff.\n".to_vec()),
        (".codex/history.jsonl".into(), b"{\"session_id\":\"x\",\"ts\":1764324000,\"text\":\"hi codex\"}\n".to_vec()),
        (".codex/session_index.jsonl".into(), format!("{{\"id\":\"{CODEX_ID}\",\"thread_name\":\"Port\"}}\n").into()),
        (rollout, codex_rollout(CODEX_ID, Path::new(&cwd)).into_bytes()),
    ];
    for (rel, data) in &visible {
        stage.write(&format!("{home}/{rel}"), data);
    }
    stage.mkdir(&format!("{home}/.claude/projects/p/emptydir"));
    let hidden = credential_shaped(stage, &home);
    set_mtimes(&stage.host(&home));
    write_expectations(stage, &home, &hidden, &chat);
    agent(stage, LIGHT, &cwd, &format!("{home}/{transcript_rel}"));
    let tree = tree_paths(&transcript_rel).remove(0);
    Light { transcript_tree: tree, transcript: format!("{home}/{transcript_rel}") }
}

/// The credential-shaped entries (files holding `SECRET`, and one
/// directory), inside the mirrored directories where a listing would show
/// them and at the harness roots where a real home keeps them; the disk
/// paths (relative to the home) the mirrors must hide.
fn credential_shaped(stage: &Stage, home: &str) -> Vec<String> {
    let hidden = [
        ".claude/projects/p/.credentials.json",
        ".claude/projects/p/auth.json",
        ".claude/projects/p/settings.json",
        ".claude/projects/p/server.pem",
        ".claude/projects/p/prod.env",
        ".claude/projects/p/id_ed25519",
        ".claude/projects/p/sub/my-token.txt",
        ".claude/projects/oauth-cache",
        ".claude/skills/review/SECRET-plan.md",
        ".codex/sessions/auth.json",
        ".codex/sessions/2025/config.toml",
    ];
    for rel in hidden {
        if rel.ends_with("oauth-cache") {
            stage.write(&format!("{home}/{rel}/cache.json"), SECRET);
        } else {
            stage.write(&format!("{home}/{rel}"), SECRET);
        }
    }
    for rel in [".claude/.credentials.json", ".claude/settings.json", ".codex/auth.json", ".codex/config.toml"] {
        stage.write(&format!("{home}/{rel}"), SECRET);
    }
    hidden.iter().map(|s| s.to_string()).collect()
}

/// The light chat: every common kind of message, one of them long (so the
/// parallel readers overlap), and the names and texts it must be served as.
fn light_chat() -> (Vec<u8>, Vec<(String, Vec<u8>)>) {
    let said = "two files:\n- a.rs\n- b \"quoted\" \\ path\ttab \u{e9} \u{2713}";
    let long: String = (0..6_000).map(|i| format!("src/lib.rs:{i}: fn f{i}() {{}}\n")).collect();
    let body = lines(&[
        claude_user("list the files", 0),
        claude_title("Listing files"),
        claude_assistant(said, 1),
        claude_thinking("they want ls", 2),
        claude_tool_use("toolu_1", "Bash", serde_json::json!({"command":"rg -n fn"}), 3),
        claude_tool_result("toolu_1", &long, 4),
        claude_user("thanks", 5),
    ]);
    let want = [
        ("00000000-user", "list the files\n".to_string()),
        ("00000001-assistant", format!("{said}\n")),
        ("00000002-thinking", "they want ls\n".to_string()),
        ("00000003-bash", "Bash\n{\"command\":\"rg -n fn\"}\n".to_string()),
        ("00000004-bash-result", long),
        ("00000005-user", "thanks\n".to_string()),
    ];
    (body, want.into_iter().map(|(n, t)| (n.to_string(), t.into_bytes())).collect())
}

/// A fake `<proc>` under `world` with a claude at `AGENT_PID` in `cwd`,
/// and its registry record naming `SID`; `transcript` must exist.
pub(crate) fn agent(stage: &Stage, world: &str, cwd: &str, transcript: &str) {
    assert!(stage.host(transcript).is_file(), "{transcript} is the agent's transcript");
    let proc = FakeProc::at(stage.host(&format!("{world}/proc")));
    proc.add(AGENT_PID, &["claude"], Path::new(cwd), b"ZMX_SESSION=kernel\0", &[]);
    let record = format!(
        r#"{{"pid":{AGENT_PID},"sessionId":"{SID}","cwd":"{cwd}","procStart":"{}","status":"busy","name":"kernel"}}"#,
        fake_start(AGENT_PID)
    );
    stage.write(&format!("{world}/home/.claude/sessions/{AGENT_PID}.json"), record.as_bytes());
}

/// The heavy home: `HEAVY_FILES` small files in one directory and an agent
/// whose transcript holds `HEAVY_MESSAGES` prompts; the transcript's size.
fn heavy(stage: &Stage) -> usize {
    let home = format!("{HEAVY}/home");
    let cwd = format!("{home}/src/app");
    stage.mkdir(&cwd);
    for i in 0..HEAVY_FILES {
        stage.write(&format!("{home}/.claude/projects/big/f{i:05}"), format!("file {i} of {HEAVY_FILES}\n").as_bytes());
    }
    let mut body = Vec::new();
    for i in 0..HEAVY_MESSAGES {
        body.extend_from_slice(claude_user(&format!("prompt {i}"), i).as_bytes());
        body.push(b'\n');
    }
    let rel = format!(".claude/projects/{}/{SID}.jsonl", claude_project_dir(Path::new(&cwd)));
    stage.write(&format!("{home}/{rel}"), &body);
    agent(stage, HEAVY, &cwd, &format!("{home}/{rel}"));
    body.len()
}

/// The move daemon's world: a home whose claude transcript records the
/// agent's cwd and session (the registry record naming the agent's pid and
/// starttime is written in the guest, once the agent runs), the cwd, and
/// the fake zmx: a shell script that records how it was run in
/// `/run/zmx.record.<name>` and posts the session's socket in the zmx
/// registry (`probe listen`, which detaches), as `zmx run <name> -d` does.
/// The lines `/fx/env` gets.
fn mover(stage: &Stage) -> String {
    let (home, cwd) = (format!("{MOVE}/home"), format!("{MOVE}/work"));
    stage.mkdir(&cwd);
    stage.mkdir(&format!("{home}/.claude/sessions"));
    let project = claude_project_dir(Path::new(&cwd));
    let first = format!(
        r#"{{"type":"user","cwd":"{cwd}","sessionId":"{SID}","message":{{"role":"user","content":"move me"}}}}"#
    );
    stage.write(&format!("{home}/.claude/projects/{project}/{SID}.jsonl"), format!("{first}\n").as_bytes());
    let zmx = "#!/bin/sh\n# The kernel test's fake zmx (tests/kernel/fixture.rs): records how it was run, then\n\
               # posts the session's socket in the zmx registry and leaves it there.\n\
               printf 'argv: %s\\ncwd: %s\\n' \"$*\" \"$(pwd)\" > \"/run/zmx.record.$2.tmp\"\n\
               mv \"/run/zmx.record.$2.tmp\" \"/run/zmx.record.$2\"\n\
               exec /bin/probe listen \"$XDG_RUNTIME_DIR/9p/zmx/$2\"\n";
    let path = stage.write(MOVE_ZMX, zmx.as_bytes());
    fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    format!("MOVE_HOME={home}\nMOVE_CWD={cwd}\nMOVE_SID={SID}\nMOVE_RUNTIME={MOVE_RUNTIME}\n")
}

/// The tree paths a home-relative disk path is served at (a directory may
/// be mirrored twice: `.claude/skills` is `/claude/skills` and
/// `/skills/claude`), without the leading `/`.
fn tree_paths(rel: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (tree, disk) in MOUNTS {
        let tree = &tree[1..];
        if rel == *disk {
            out.push(tree.to_string());
        } else if let Some(rest) = rel.strip_prefix(disk).and_then(|r| r.strip_prefix('/')) {
            out.push(format!("{tree}/{rest}"));
        }
    }
    out
}

/// Give every entry under `dir` (itself included) a distinct mtime, in a
/// fixed order, so a stat that reports another file's time, or the
/// guest's boot time, is caught.
fn set_mtimes(dir: &Path) {
    let mut all = Vec::new();
    walk(dir, &mut all);
    all.sort();
    for (k, path) in all.iter().enumerate() {
        let t = UNIX_EPOCH + Duration::from_secs(MTIME_BASE + 97 * k as u64);
        let f = fs::File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
        f.set_modified(t).unwrap_or_else(|e| panic!("set mtime of {}: {e}", path.display()));
    }
}

/// Every path under `dir`, `dir` included (a file is only itself),
/// symlinks not followed.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_path_buf());
    if !fs::symlink_metadata(dir).unwrap().is_dir() {
        return;
    }
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if fs::symlink_metadata(&p).unwrap().is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The light world's expectation files (see the module doc).
fn write_expectations(stage: &Stage, home: &str, hidden: &[String], chat: &[(String, Vec<u8>)]) {
    let host_home = stage.host(home);
    let (mut manifest, mut paths, mut mounts) = (String::new(), Vec::new(), String::new());
    for (tree, disk) in MOUNTS {
        let root = host_home.join(disk);
        if !root.exists() {
            continue;
        }
        writeln!(mounts, "{}", &tree[1..]).unwrap();
        let mut all = Vec::new();
        walk(&root, &mut all);
        for path in all {
            let rel = path.strip_prefix(&host_home).unwrap().to_str().unwrap().to_string();
            if hidden.iter().any(|h| rel == *h || rel.starts_with(&format!("{h}/"))) {
                continue;
            }
            let meta = fs::symlink_metadata(&path).unwrap();
            let mtime = meta.modified().unwrap().duration_since(UNIX_EPOCH).unwrap().as_secs();
            let (ty, size) = if meta.is_dir() { ('d', 0) } else { ('f', meta.len()) };
            let tree_path = tree_paths(&rel).into_iter().find(|t| t.starts_with(&tree[1..])).unwrap();
            writeln!(manifest, "{ty}\t{size}\t{mtime}\t{tree_path}\t{home}/{rel}").unwrap();
            paths.push(format!("{ty} {tree_path}"));
        }
    }
    paths.sort();
    let hidden_trees: Vec<String> = hidden.iter().flat_map(|h| tree_paths(h)).collect();
    stage.write(&format!("{LIGHT}/manifest"), manifest.as_bytes());
    stage.write(&format!("{LIGHT}/paths"), (paths.join("\n") + "\n").as_bytes());
    stage.write(&format!("{LIGHT}/mounts"), mounts.as_bytes());
    stage.write(&format!("{LIGHT}/hidden"), (hidden_trees.join("\n") + "\n").as_bytes());
    let mut names = String::new();
    for (name, text) in chat {
        stage.write(&format!("{LIGHT}/chat/{name}"), text);
        writeln!(names, "{name}").unwrap();
    }
    stage.write(&format!("{LIGHT}/chat.names"), names.as_bytes());
    stage.write(&format!("{LIGHT}/parallel"), parallel(home, chat).as_bytes());
    for (k, version) in VERSIONS.iter().enumerate() {
        let text = format!("appended in the guest over {version}");
        let line = claude_user(&text, 100 + k as u64);
        assert!(!line.contains('\\') && !line.contains('\''), "the guest echoes it between single quotes");
        stage.write(&format!("{LIGHT}/append-{version}"), format!("{line}\n").as_bytes());
        stage.write(&format!("{LIGHT}/append-{version}.want"), format!("{text}\n").as_bytes());
    }
}

/// The 16 parallel readers' files: the light home's larger files and every
/// chat message, repeated to 16, each with the file it must equal.
fn parallel(home: &str, chat: &[(String, Vec<u8>)]) -> String {
    let files = [
        ("claude/projects/p/large.bin", format!("{home}/.claude/projects/p/large.bin")),
        ("claude/projects/p/binary.bin", format!("{home}/.claude/projects/p/binary.bin")),
        ("codex/history", format!("{home}/.codex/history.jsonl")),
    ];
    let mut all: Vec<(String, String)> = files.iter().map(|(t, d)| (t.to_string(), d.clone())).collect();
    for (name, _) in chat {
        all.push((format!("active/claude/{AGENT_PID}/chat/{name}"), format!("{LIGHT}/chat/{name}")));
    }
    (0..16).map(|i| &all[i % all.len()]).map(|(t, want)| format!("{t}\t{want}\n")).collect()
}

/// `n` bytes of a fixed xorshift sequence: every byte value, no pattern a
/// read at a wrong offset could reproduce.
fn pseudo_random(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}
