//! Every real transcript in `../shared/data/transcripts`: indexed the way
//! the server feeds it, and every message read whole and in pieces.

use super::*;
use crate::chat::scan::tests::all_simd;
use crate::chat::Kind;
use std::path::PathBuf;

pub(super) const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/transcripts");

/// Every transcript-like file there, with the format to read it as (the
/// other harnesses' files are read as both: they must not break either).
pub(super) fn transcripts() -> Vec<(Format, PathBuf)> {
    let mut out = Vec::new();
    for (sub, formats) in [
        ("claude", &[Format::Claude][..]),
        ("codex", &[Format::Codex][..]),
        ("omp", &[Format::Pi][..]),
        ("other", &[Format::Claude, Format::Codex, Format::Pi][..]),
    ] {
        let Ok(dir) = std::fs::read_dir(format!("{DIR}/{sub}")) else { continue };
        let mut paths: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths.into_iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl" || e == "json")) {
            out.extend(formats.iter().map(|&f| (f, p.clone())));
        }
    }
    out
}

#[test]
fn every_real_transcript_indexes_and_every_message_reads_as_long_as_its_stat() {
    let all = transcripts();
    if all.is_empty() {
        println!("skipped: no transcripts at {DIR}");
        return;
    }
    let mut seed = 0xD1CE_u64;
    let (mut files, mut messages) = (0, 0);
    for (format, path) in all {
        let file = std::fs::read(&path).expect("a readable transcript");
        let mut ix = index_in_windows(format, &file, 64 * 1024, crate::chat::scan::Simd::detect());
        let complete = file.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
        assert_eq!(ix.covered() as usize, complete, "{}", path.display());
        assert!(!ix.full());
        for id in 0..ix.len() {
            let size = ix.info(id).unwrap().size;
            let whole = read(&mut ix, &file, id, 0, size);
            assert_eq!(whole.len() as u64, size, "{} message {id}", path.display());
            let off = xorshift(&mut seed) % (size + 1);
            let count = 1 + xorshift(&mut seed) % 10_000;
            let end = (off + count).min(size) as usize;
            assert_eq!(read(&mut ix, &file, id, off, count), &whole[off as usize..end]);
            let mut name = Vec::new();
            ix.name(id, &mut name);
            assert_eq!(ix.lookup(&name), Some(id));
        }
        println!("{:>6} messages  {}", ix.len(), path.file_name().unwrap().to_string_lossy());
        files += 1;
        messages += ix.len();
    }
    println!("{files} files, {messages} messages");
}

#[test]
fn real_transcripts_index_the_same_with_every_classifier() {
    for (format, path) in transcripts() {
        let file = std::fs::read(&path).expect("a readable transcript");
        let reference = index_in_windows(format, &file, 1 << 24, crate::chat::scan::Simd::Scalar);
        for simd in all_simd() {
            let ix = index_in_windows(format, &file, 1 << 16, simd);
            assert!(ix.store.msgs == reference.store.msgs, "{simd:?} {}", path.display());
            assert!(ix.store.spans == reference.store.spans, "{simd:?} {}", path.display());
            assert_eq!(names(&ix), names(&reference), "{simd:?} {}", path.display());
            assert_eq!(ix.usage(), reference.usage(), "{simd:?} {}", path.display());
        }
    }
}

/// The kinds of one transcript's messages, counted.
fn kinds(format: Format, name: &str) -> Option<Vec<(Kind, usize)>> {
    let file = std::fs::read(format!("{DIR}/{name}")).ok()?;
    let ix = index(format, &file);
    let mut counts: Vec<(Kind, usize)> = Kind::ALL.iter().map(|&k| (k, 0)).collect();
    for id in 0..ix.len() {
        let k = ix.info(id).unwrap().kind;
        counts.iter_mut().find(|(c, _)| *c == k).unwrap().1 += 1;
    }
    Some(counts.into_iter().filter(|(_, n)| *n > 0).collect())
}

#[test]
fn real_transcripts_say_what_their_records_say() {
    let Some(k) = kinds(Format::Claude, "claude/cc-2.0.29__windows-system-api-error__LilLeapo.jsonl") else {
        println!("skipped: no transcripts at {DIR}");
        return;
    };
    // Nine api_error retries are bookkeeping; the prompt and the
    // interruption ("[Request interrupted by user]") are said.
    assert_eq!(k, [(Kind::User, 2)]);
    // A subagent's own transcript is all sidechain: no main thread to say.
    let sub = kinds(Format::Claude, "claude/cc-2.1.114__subagent-compact-boundary__LeoDChen.jsonl").unwrap();
    assert_eq!(sub, [], "{sub:?}");
    // The 2.1.92 prompt that only a queue-operation holds is said.
    let file = std::fs::read(format!("{DIR}/claude/cc-2.1.92__bridge-status-subagents__Zatoichi-42.jsonl")).unwrap();
    let mut ix = index(Format::Claude, &file);
    let said = (0..ix.len()).any(|id| text(&mut ix, &file, id).starts_with("show me the list of changes necessary"));
    assert!(said);
    // A legacy rollout reads its bare items.
    let legacy = kinds(Format::Codex, "codex/cx-legacy-2025-09__no-wrapper-2__Elektriker-Edgar.jsonl").unwrap();
    assert!(legacy.iter().any(|&(k, n)| k == Kind::ToolResult && n == 26), "{legacy:?}");
    // Only an ai-title: nothing said yet.
    assert_eq!(kinds(Format::Claude, "claude/cc-noversion__ai-title-only-stub__leejunha781.jsonl").unwrap(), []);
}

#[test]
fn every_string_of_every_real_transcript_decodes_as_serde_json_decodes_it() {
    use crate::chat::store::Enc;
    let mut checked = 0;
    for (format, path) in transcripts() {
        let file = std::fs::read(&path).expect("a readable transcript");
        let ix = index(format, &file);
        for s in &ix.store.spans {
            let (off, end) = (s.off() as usize, (s.off() + s.len()) as usize);
            match s.enc() {
                Enc::Str => {
                    let mine = crate::chat::render::decode_body(&file[off..end]);
                    assert_eq!(mine.len() as u64, s.out(), "{} at {off}: the measure is the decoding", path.display());
                    assert_eq!(s.nl(), !mine.is_empty() && !mine.ends_with(b"\n"));
                    // serde_json refuses lone surrogates; those are U+FFFD here.
                    if let Ok(theirs) = serde_json::from_slice::<String>(&file[off - 1..end + 1]) {
                        assert_eq!(mine, theirs.as_bytes(), "{} at {off}", path.display());
                        checked += 1;
                    }
                }
                Enc::Raw => {
                    let v = serde_json::from_slice::<serde_json::Value>(&file[off..end]);
                    assert!(v.is_ok(), "{} at {off}: a raw span is a JSON value", path.display());
                }
                Enc::Lit => {}
            }
        }
    }
    println!("{checked} strings decoded as serde_json decodes them");
}
