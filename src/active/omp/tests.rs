use super::*;

const T: &[u8] =
    b"/home/u/.omp/agent/sessions/-src-9agents/2026-11-28T14-05-31-207Z_01a22279-b4c7-7a46-a6f6-3babbe5064c9.jsonl";
const ID: &[u8] = b"01a22279-b4c7-7a46-a6f6-3babbe5064c9";

#[test]
fn the_session_id_follows_the_last_underscore() {
    assert_eq!(session_id(file_name(T)), Some(ID));
    assert_eq!(session_id(b"2026_x_y.jsonl"), Some(&b"y"[..]));
    for bad in [&b"_id.jsonl"[..], b"noid.jsonl", b"2026_.jsonl", b"2026_a.b.jsonl", b"2026_id.json", b"settings.json"]
    {
        assert_eq!(session_id(bad), None, "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn the_fd_route_takes_session_transcripts_not_subagents() {
    let sub: &[u8] = b"/home/u/.omp/agent/sessions/-src-9agents/2026-11-28T14-05-31-207Z_01a22279-b4c7-7a46-a6f6-3babbe5064c9/0-scout_01b.jsonl";
    let targets: [&[u8]; 6] = [
        b"/dev/pts/1",
        sub,
        T,
        T,
        b"/home/u/.omp/agent/sessions/2026_loose.jsonl",
        b"/home/u/.omp/agent/skills/x/2026_id.jsonl",
    ];
    let found = fd_transcripts(&targets, b"/home/u/.omp");
    assert_eq!(found, [Transcript { rel: &T[13..], id: ID }]);
}

#[test]
fn several_open_transcripts_resolve_newest_first() {
    let a = Transcript { rel: b"agent/sessions/-x/2026-01-01_a.jsonl", id: b"a" };
    let b = Transcript { rel: b"agent/sessions/-x/2026-01-02_b.jsonl", id: b"b" };
    assert_eq!(newest(&[(a, 200), (b, 100)]), Some(a));
    assert_eq!(newest(&[(a, 100), (b, 100)]), Some(b));
    assert_eq!(newest(&[]), None);
}

#[test]
fn a_cwd_in_home_names_its_store_relative_to_home() {
    let dirs = store_dirs(b"/home/demo/src/9agents", b"/home/demo", b"/tmp");
    assert_eq!(dirs, [&b"-src-9agents"[..], b"--home-demo-src-9agents--", b"-home-demo-src-9agents"]);
    assert_eq!(store_dirs(b"/home/demo", b"/home/demo/", b"/tmp")[0], b"-");
    assert_eq!(store_dirs(b"/home/demo/a:b\\c", b"/home/demo", b"/tmp")[0], b"-a-b-c");
}

#[test]
fn a_cwd_in_tmp_names_its_store_relative_to_tmp() {
    assert_eq!(store_dirs(b"/tmp/scratch/x", b"/home/u", b"/tmp")[0], b"-tmp-scratch-x");
    assert_eq!(store_dirs(b"/tmp", b"/home/u", b"/tmp")[0], b"-tmp");
}

#[test]
fn any_other_cwd_names_its_store_in_the_legacy_absolute_form() {
    let dirs = store_dirs(b"/srv/app/", b"/home/u", b"/tmp");
    assert_eq!(dirs, [&b"--srv-app--"[..], b"-srv-app"]);
    assert_eq!(store_dirs(b"/", b"/home/u", b"/tmp"), [&b"----"[..], b"-"]);
}

#[test]
fn a_home_that_is_only_a_prefix_of_the_cwd_is_not_its_home() {
    assert_eq!(store_dirs(b"/home/demo2/x", b"/home/demo", b"/tmp")[0], b"--home-demo2-x--");
}

#[test]
fn a_cwd_that_is_not_absolute_names_no_store() {
    assert!(store_dirs(b"", b"/home/u", b"/tmp").is_empty());
    assert!(store_dirs(b"src/x", b"/home/u", b"/tmp").is_empty());
    assert!(store_dirs(b"/a\0b", b"/home/u", b"/tmp").is_empty());
    assert_eq!(store_dirs(b"/home/u/x", b"", b"")[0], b"--home-u-x--");
}

#[test]
fn no_store_name_can_be_a_path() {
    for cwd in [&b"/.."[..], b"/home/u/..", b"/home/u/../..", b"/tmp/."] {
        for name in store_dirs(cwd, b"/home/u", b"/tmp") {
            assert!(!name.contains(&b'/') && name != b".." && name != b"." && !name.is_empty());
        }
    }
}

#[test]
fn the_dir_route_picks_the_newest_transcript_in_the_store() {
    let entries: [(&[u8], u64); 4] = [
        (b"2026-11-28T14-05-31-207Z_01a22279-b4c7-7a46-a6f6-3babbe5064c9.jsonl", 100),
        (b"2026-11-29T08-00-00-000Z_01a22600-0000-7000-8000-000000000000.jsonl", 300),
        (b"settings.json", 900),
        (b"notes.jsonl", 800),
    ];
    assert_eq!(dir_pick(&entries), Some(entries[1].0));
    assert_eq!(dir_pick(&entries[2..]), None);
}

#[test]
fn the_demo_home_names_its_store_the_way_store_dirs_does() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/demo/home/.omp/agent/sessions");
    let Ok(listing) = std::fs::read_dir(root) else {
        eprintln!("skipped: no demo omp store at {root}");
        return;
    };
    let names: Vec<Vec<u8>> = listing.filter_map(Result::ok).map(|e| e.file_name().into_encoded_bytes()).collect();
    let want = &store_dirs(b"/home/demo/src/9agents", b"/home/demo", b"/tmp")[0];
    assert!(names.contains(want), "{names:?}");
}
