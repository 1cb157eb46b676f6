//! Random damage to real lines: the index never panics, never makes a span
//! outside one complete line, and every message reads as long as its stat.

use super::*;
use crate::chat::store::Enc;

/// Lines to damage: a few from each real transcript when they are here,
/// and the seed's fixtures always.
fn sample_lines() -> Vec<(Format, Vec<u8>)> {
    let mut out = Vec::new();
    for (format, l) in [(Format::Claude, seed_claude()), (Format::Codex, seed_codex())] {
        out.extend(l.split(|&c| c == b'\n').filter(|l| !l.is_empty()).map(|l| (format, l.to_vec())));
    }
    for (format, path) in super::real::transcripts() {
        let Ok(bytes) = std::fs::read(&path) else { continue };
        let ls: Vec<&[u8]> = bytes.split(|&c| c == b'\n').filter(|l| !l.is_empty() && l.len() < 20_000).collect();
        out.extend(ls.iter().step_by((ls.len() / 12).max(1)).map(|l| (format, l.to_vec())));
    }
    out
}

fn seed_claude() -> Vec<u8> {
    lines(&[
        r#"{"type":"user","message":{"role":"user","content":"fix the \"race\"\nplease"},"timestamp":"2026-09-24T12:51:26.691Z"}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls -la"}}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"caf\u00e9 \ud83d\ude00"},{"type":"image","source":{"data":"AAAA"}}]}]}}"#,
        r#"{"type":"queue-operation","operation":"enqueue","content":"stop"}"#,
        r#"{"type":"queue-operation","operation":"remove"}"#,
    ])
}

fn seed_codex() -> Vec<u8> {
    lines(&[
        r#"{"timestamp":"2026-09-24T12:51:30.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}}"#,
        r#"{"timestamp":"2026-09-24T12:51:31.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"file\\n\u001b[0m"}}"#,
        r#"{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"**Planning**"}],"content":null}"#,
    ])
}

const ALPHABET: &[u8] = b"\"\\{}[]:,\n ub0aD8e9xn/t\r";

/// One random change: a byte replaced, inserted or removed, a stretch
/// repeated or cut off.
fn damage(line: &mut Vec<u8>, seed: &mut u64) {
    let n = line.len().max(1);
    let at = (xorshift(seed) % n as u64) as usize;
    let c = ALPHABET[(xorshift(seed) % ALPHABET.len() as u64) as usize];
    match xorshift(seed) % 5 {
        0 if at < line.len() => line[at] = c,
        1 => line.insert(at.min(line.len()), c),
        2 if at < line.len() => drop(line.remove(at)),
        3 => {
            let end = (at + (xorshift(seed) % 40) as usize).min(line.len());
            let piece = line[at.min(end)..end].to_vec();
            line.splice(at.min(end)..at.min(end), piece);
        }
        _ => line.truncate(at),
    }
}

/// Every span inside one complete line of what was covered.
fn assert_spans_inside_lines(ix: &Index, file: &[u8]) {
    let covered = ix.covered() as usize;
    for s in &ix.store.spans {
        if s.enc() == Enc::Lit {
            continue;
        }
        let (off, end) = (s.off() as usize, (s.off() + s.len()) as usize);
        assert!(end <= covered, "a span past the covered end");
        assert!(!file[off..end].contains(&b'\n'), "a span across a line's end");
        let line_end = file[off..].iter().position(|&c| c == b'\n').map(|i| off + i);
        assert!(line_end.is_some_and(|e| e < covered), "a span in a line not yet complete");
    }
}

#[test]
fn random_damage_to_real_lines_never_escapes_a_line_or_breaks_a_read() {
    let sample = sample_lines();
    let mut seed = 0x5EED_CAFE_F00D_u64;
    for round in 0..3000 {
        let (format, _) = sample[(xorshift(&mut seed) % sample.len() as u64) as usize];
        let mut file = Vec::new();
        for _ in 0..3 {
            let (_, line) = &sample[(xorshift(&mut seed) % sample.len() as u64) as usize];
            let mut line = line.clone();
            for _ in 0..1 + xorshift(&mut seed) % 4 {
                damage(&mut line, &mut seed);
            }
            file.extend_from_slice(&line);
            file.push(b'\n');
        }
        let w = 1 + (xorshift(&mut seed) % 300) as usize;
        let simd = crate::chat::scan::tests::all_simd()[round % crate::chat::scan::tests::all_simd().len()];
        let mut ix = index_in_windows(format, &file, w, simd);
        assert_spans_inside_lines(&ix, &file);
        for id in 0..ix.len() {
            let size = ix.info(id).unwrap().size;
            assert_eq!(read(&mut ix, &file, id, 0, size).len() as u64, size, "round {round}, message {id}");
            let off = xorshift(&mut seed) % (size + 1);
            let whole = read(&mut ix, &file, id, 0, size);
            assert_eq!(read(&mut ix, &file, id, off, 7), &whole[off as usize..(off + 7).min(size) as usize]);
        }
    }
}
