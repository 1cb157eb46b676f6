//! Reads at any offset, across the edges of the feed's windows, the scan's
//! blocks and the reads themselves; and the same index whatever the
//! classifier and the window.

use super::*;
use crate::chat::scan::tests::all_simd;

/// A string far longer than any window, dense with escapes, so some
/// escape straddles every edge a feed or a read crosses.
fn escaped_line(reps: usize) -> (Vec<u8>, Vec<u8>) {
    let unit = r#"ab\u00e9\n\ud83d\ude00\"x\\"#;
    let plain = "abé\n😀\"x\\";
    let mut file = br#"{"type":"user","message":{"content":""#.to_vec();
    let mut want = Vec::new();
    for _ in 0..reps {
        file.extend_from_slice(unit.as_bytes());
        want.extend_from_slice(plain.as_bytes());
    }
    file.extend_from_slice(b"\"}}\n");
    want.push(b'\n');
    (file, want)
}

#[test]
fn reads_at_any_offset_match_the_whole_across_every_edge() {
    let (file, want) = escaped_line(12_000);
    for simd in all_simd() {
        for w in [1000, 4093, 65_536] {
            let mut ix = index_in_windows(Format::Claude, &file, w, simd);
            assert_eq!(ix.len(), 1);
            assert_eq!(ix.info(0).unwrap().size, want.len() as u64);
            assert_eq!(read(&mut ix, &file, 0, 0, want.len() as u64), want, "{simd:?} {w}");
        }
    }
    let mut ix = index(Format::Claude, &file);
    // Front to back at odd sizes, the way a client's reads arrive: each
    // resumes where the last stopped.
    let mut off = 0u64;
    while off < want.len() as u64 {
        let got = read(&mut ix, &file, 0, off, 4093);
        assert_eq!(got, &want[off as usize..off as usize + got.len()]);
        off += got.len() as u64;
    }
    assert!(read(&mut ix, &file, 0, off, 4093).is_empty());
    // Backwards, and each read twice: a cursor a later read left behind
    // must not be trusted.
    let mut back = want.len() as u64;
    while back > 0 {
        let at = back.saturating_sub(3001);
        for _ in 0..2 {
            let got = read(&mut ix, &file, 0, at, back - at);
            assert_eq!(got, &want[at as usize..back as usize]);
        }
        back = at;
    }
}

#[test]
fn a_front_to_back_read_asks_for_each_input_byte_about_once() {
    let (file, want) = escaped_line(50_000);
    let mut ix = index(Format::Claude, &file);
    let (mut off, mut asked) = (0u64, 0u64);
    while off < want.len() as u64 {
        let plan = ix.render_plan(0, off, 8192).unwrap();
        asked += plan.file_len;
        off += read(&mut ix, &file, 0, off, 8192).len() as u64;
    }
    // Each plan may over-ask by its bound (six input bytes per output
    // byte), never by what came before it.
    let reads = want.len() as u64 / 8192 + 1;
    assert!(asked < file.len() as u64 + reads * (6 * 8192 + 12), "asked {asked} for {}", file.len());
}

#[test]
fn a_short_input_gives_fewer_bytes_and_never_panics() {
    let (file, want) = escaped_line(100);
    let mut ix = index(Format::Claude, &file);
    let plan = ix.render_plan(0, 10, 500).unwrap();
    let input = &file[plan.file_offset as usize..][..plan.file_len as usize];
    for cut in [0, 1, 7, 100] {
        let mut out = Vec::new();
        let n = ix.render(&plan, &input[..cut], &mut out);
        assert!(n <= cut);
        assert_eq!(out, &want[10..10 + n]);
    }
}

#[test]
fn every_classifier_and_every_window_build_the_same_index() {
    let mut file = lines(&[
        r#"{"type":"user","message":{"content":"fix the \"race\"\\\nplease"},"timestamp":"2026-09-24T12:51:26.691Z"}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls \\\"-la\\\""}}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"caf\u00e9\ud83d\ude00\u001b[0m\\\\"}]}}"#,
    ]);
    file.extend_from_slice(&escaped_line(300).0);
    file.extend_from_slice(b"{\"type\":\"user\",\"message\":{\"content\":\"unfinished");
    let reference = index_in_windows(Format::Claude, &file, 1 << 20, crate::chat::scan::Simd::Scalar);
    for simd in all_simd() {
        for w in [1, 7, 63, 64, 65, 200, 4096] {
            let ix = index_in_windows(Format::Claude, &file, w, simd);
            assert_eq!(ix.covered(), reference.covered());
            assert_eq!(ix.store.msgs, reference.store.msgs, "{simd:?} window {w}");
            assert_eq!(ix.store.spans, reference.store.spans, "{simd:?} window {w}");
        }
    }
}

#[test]
fn strings_measure_what_they_render_at_every_block_offset() {
    // Each escape at each of the 64 positions of a block, and runs of
    // backslashes of every length up to past a block, before a quote.
    let escapes = [r"\n", r"\u00e9", r"\u20ac", r"\ud83d\ude00", r"\ud83d", r"\ude00x", r"\q", r"\u12", r#"\""#];
    let mut ls = Vec::new();
    for e in escapes {
        for pad in 0..70 {
            ls.push(format!(r#"{{"type":"user","message":{{"content":"{}{e}tail"}}}}"#, "p".repeat(pad)));
        }
    }
    for run in 0..140 {
        let bs = "\\".repeat(run * 2);
        ls.push(format!(r#"{{"type":"user","message":{{"content":"{bs}\"{bs}"}}}}"#));
    }
    let refs: Vec<&str> = ls.iter().map(String::as_str).collect();
    let file = lines(&refs);
    for simd in all_simd() {
        let mut ix = index_in_windows(Format::Claude, &file, 1 << 20, simd);
        assert_eq!(ix.len(), ls.len(), "{simd:?}");
        for id in 0..ix.len() {
            let size = ix.info(id).unwrap().size;
            assert_eq!(read(&mut ix, &file, id, 0, u64::MAX).len() as u64, size, "{simd:?} message {id}");
        }
    }
}

#[test]
fn a_message_reads_the_same_in_pieces_of_every_size() {
    let file = lines(&[
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Edit","input":{"old":"a\"b","new":"\u00e9"}}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"one\n"},{"type":"image"},{"type":"text","text":"\u00e9\ud83d\ude00"},{"type":"x"}]}]}}"#,
    ]);
    let mut ix = index(Format::Claude, &file);
    assert_reads_agree(&mut ix, &file);
    for id in 0..ix.len() {
        let size = ix.info(id).unwrap().size;
        let whole = read(&mut ix, &file, id, 0, size);
        for piece in 1..=size {
            let mut got = Vec::new();
            let mut off = 0;
            while off < size {
                got.extend(read(&mut ix, &file, id, off, piece));
                off = got.len() as u64;
            }
            assert_eq!(got, whole, "message {id} in pieces of {piece}");
        }
    }
}

/// `s` as a JSON string body, each character escaped one of the ways JSON
/// allows, picked at random.
fn escape_any_way(s: &str, seed: &mut u64) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let plain = !matches!(c, '"' | '\\') && c >= ' ';
        match (xorshift(seed) % 3, plain) {
            (0, true) => out.push(c),
            (1, _) if serde_json::to_string(&c.to_string()).is_ok() => {
                let quoted = serde_json::to_string(&c.to_string()).unwrap();
                out.push_str(&quoted[1..quoted.len() - 1]);
            }
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{:04x}", u));
                }
            }
        }
    }
    out
}

#[test]
fn any_valid_json_string_renders_as_the_text_it_encodes() {
    let alphabet: Vec<char> = "ab \"\\/\n\t\r\u{8}\u{c}\u{1b}\u{0}é€😀\u{10FFFF}\u{FFFD}{}[]:,".chars().collect();
    let mut seed = 0x00A1_1CE5_u64;
    let mut file = Vec::new();
    let mut want = Vec::new();
    for _ in 0..2000 {
        let len = (xorshift(&mut seed) % 40) as usize;
        let s: String = (0..len).map(|_| alphabet[(xorshift(&mut seed) % alphabet.len() as u64) as usize]).collect();
        let body = escape_any_way(&s, &mut seed);
        file.extend_from_slice(format!(r#"{{"type":"user","message":{{"content":"{body}"}}}}"#).as_bytes());
        file.push(b'\n');
        want.push(s);
    }
    for simd in all_simd() {
        let mut ix = index_in_windows(Format::Claude, &file, 4096, simd);
        assert_eq!(ix.len(), want.len());
        for (id, s) in want.iter().enumerate() {
            let mut expect = s.clone();
            if !expect.is_empty() && !expect.ends_with('\n') {
                expect.push('\n');
            }
            assert_eq!(text(&mut ix, &file, id), expect, "{simd:?} message {id}");
        }
    }
}
