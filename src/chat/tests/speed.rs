//! A quick measure of indexing speed on a synthetic codex rollout, against
//! the seed's memchr2 quote-to-quote walk, and where the events fall: probes
//! of crate-internal parts (the classifiers, the walker) for profiling, not
//! checks. They build a 228 MB input and mean something only in release, so
//! they are compiled only with the `speed-probes` feature (scripts/test
//! checks that they still build); the benchmark with targets is
//! bench/index.rs. Run with
//! `cargo test --release --features speed-probes --lib chat::tests::speed -- --nocapture`
//! (`CHAT_SPEED_MB` sets the size, 228 by default; `CHAT_SPEED_FILE` reads
//! a rollout instead; `CHAT_SPEED_SIMD=Avx2` measures one classifier).

use super::*;
use std::time::Instant;

/// JSON string escaping, as serde_json does it.
fn escape(s: &[u8], out: &mut Vec<u8>) {
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            _ => out.push(c),
        }
    }
}

/// Tool-output-like text: code, paths, quotes, newlines.
fn prose(seed: &mut u64, len: usize) -> Vec<u8> {
    const WORDS: [&[u8]; 16] = [
        b"fn",
        b"let",
        b"self.index",
        b"\"path\"",
        b"src/chat/mod.rs",
        b"=>",
        b"{",
        b"}",
        b"\n    ",
        b"match",
        b"Ok(())",
        b"error:",
        b"'a'",
        b"\\d+",
        b"\n",
        b"value",
    ];
    let mut out = Vec::with_capacity(len + 32);
    while out.len() < len {
        out.extend_from_slice(WORDS[(xorshift(seed) % 16) as usize]);
        out.push(b' ');
    }
    out
}

/// A rollout of about `size` bytes: most of it escaped tool output (JSON
/// inside JSON) and base64 reasoning.
fn rollout(size: usize) -> Vec<u8> {
    let mut seed = 0x2280_0000_u64;
    let mut out = Vec::with_capacity(size + (1 << 20));
    let head = br#"{"timestamp":"2026-09-24T12:51:26.691Z","type":"response_item","payload":"#;
    while out.len() < size {
        let pick = xorshift(&mut seed) % 10;
        out.extend_from_slice(head);
        match pick {
            0..=4 => {
                let mut inner = br#"{"output":""#.to_vec();
                let n = 500 + (xorshift(&mut seed) % 12_000) as usize;
                escape(&prose(&mut seed, n), &mut inner);
                inner.extend_from_slice(br#"","metadata":{"exit_code":0,"duration_seconds":0.1}}"#);
                out.extend_from_slice(br#"{"type":"function_call_output","call_id":"call_x","output":""#);
                escape(&inner, &mut out);
                out.extend_from_slice(b"\"}}\n");
            }
            5..=7 => {
                out.extend_from_slice(br#"{"type":"reasoning","summary":[{"type":"summary_text","text":"**Planning**"}],"content":null,"encrypted_content":""#);
                let n = 1000 + (xorshift(&mut seed) % 8000) as usize;
                out.extend((0..n).map(|_| {
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                        [(xorshift(&mut seed) % 64) as usize]
                }));
                out.extend_from_slice(b"\"}}\n");
            }
            8 => {
                out.extend_from_slice(br#"{"type":"function_call","name":"shell","arguments":""#);
                let mut args = br#"{"command":["bash","-lc",""#.to_vec();
                escape(&prose(&mut seed, 300), &mut args);
                args.extend_from_slice(br#""]}"#);
                escape(&args, &mut out);
                out.extend_from_slice(br#"","call_id":"call_x"}}"#);
                out.push(b'\n');
            }
            _ => {
                out.extend_from_slice(
                    br#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":""#,
                );
                escape(&prose(&mut seed, 800), &mut out);
                out.extend_from_slice(b"\"}]}}\n");
            }
        }
    }
    out
}

/// The seed's method: memchr2 from quote to quote, stepping over escapes.
fn memchr_walk(bytes: &[u8]) -> usize {
    let (mut i, mut quotes) = (0, 0);
    while let Some(k) = memchr::memchr2(b'"', b'\\', &bytes[i..]) {
        let p = i + k;
        if bytes[p] == b'\\' {
            i = p + 2;
        } else {
            quotes += 1;
            i = p + 1;
        }
        if i >= bytes.len() {
            break;
        }
    }
    quotes
}

/// The classifiers to measure: all this CPU runs, or `CHAT_SPEED_SIMD`.
fn simds() -> Vec<crate::chat::scan::Simd> {
    let only = std::env::var("CHAT_SPEED_SIMD").ok();
    let all = crate::chat::scan::tests::all_simd();
    all.into_iter().filter(|s| only.as_ref().is_none_or(|o| *o == format!("{s:?}"))).collect()
}

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::MAX;
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        last = Some(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best, last.expect("at least one run"))
}

#[test]
fn index_speed_on_a_synthetic_rollout() {
    let mb: usize = std::env::var("CHAT_SPEED_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(228);
    let file = match std::env::var("CHAT_SPEED_FILE") {
        Ok(path) => std::fs::read(path).expect("CHAT_SPEED_FILE readable"),
        Err(_) => rollout(mb << 20),
    };
    let backslashes = file.iter().filter(|&&c| c == b'\\').count() as f64 / file.len() as f64;
    let gb = file.len() as f64 / 1e9;
    let (t_walk, quotes) = best_of(3, || memchr_walk(&file));
    let (t_stream, _) = best_of(3, || memchr::memchr(0x01, &file));
    println!("streaming the file (memchr of an absent byte): {:.2} GB/s", gb / t_stream);
    for simd in simds() {
        let (t, n) = best_of(3, || {
            let mut ix = Index::with_simd(Format::Codex, MAX_MESSAGES_DEFAULT, simd);
            let mut at = 0;
            while at < file.len() {
                let used = ix.feed(at as u64, &file[at..(at + (1 << 20)).min(file.len())]);
                assert!(used > 0);
                at += used;
            }
            ix.len()
        });
        // As the server does: each window read into a buffer first.
        let mut buf = vec![0u8; 1 << 20];
        let (t_read, _) = best_of(3, || {
            let mut ix = Index::with_simd(Format::Codex, MAX_MESSAGES_DEFAULT, simd);
            let mut at = 0;
            while at < file.len() {
                let n = (file.len() - at).min(buf.len());
                buf[..n].copy_from_slice(&file[at..at + n]);
                at += ix.feed(at as u64, &buf[..n]);
            }
            ix.len()
        });
        println!("{simd:?}: windows copied to a buffer first, copy included: {:.2} GB/s", gb / t_read);
        println!(
            "{simd:?}: {:.0} MB, {n} messages, {:.1}% backslashes: index {:.2} GB/s, memchr2 walk {:.2} GB/s ({quotes} quotes), ratio {:.2}",
            file.len() as f64 / 1e6,
            backslashes * 100.0,
            gb / t,
            gb / t_walk,
            t_walk / t,
        );
    }
}

#[test]
fn scan_speed_on_a_hot_window() {
    struct Nothing(usize);
    impl crate::chat::scan::Visit for Nothing {
        fn quote(&mut self, _: usize, _: bool, _: u64) -> bool {
            self.0 += 1;
            true
        }
        fn structural(&mut self, _: usize, _: u8) -> bool {
            self.0 += 1;
            true
        }
        fn newline(&mut self, _: usize) -> bool {
            true
        }
    }
    let file = match std::env::var("CHAT_SPEED_FILE") {
        Ok(path) => std::fs::read(path).expect("CHAT_SPEED_FILE readable")[..1 << 20].to_vec(),
        Err(_) => rollout(1 << 20),
    };
    for simd in simds() {
        let (t, n) = best_of(5, || {
            let mut v = Nothing(0);
            for _ in 0..200 {
                simd.scan(&file, &mut v);
            }
            v.0
        });
        println!("{simd:?}: scan alone, hot: {:.2} GB/s ({n} events)", 200.0 * file.len() as f64 / 1e9 / t);
    }
}

#[test]
fn feed_speed_on_a_hot_window() {
    let file = match std::env::var("CHAT_SPEED_FILE") {
        Ok(path) => std::fs::read(path).expect("CHAT_SPEED_FILE readable")[..1 << 20].to_vec(),
        Err(_) => rollout(1 << 20),
    };
    let end = file.iter().rposition(|&c| c == b'\n').unwrap() + 1;
    for simd in simds() {
        let (t, n) = best_of(5, || {
            let mut n = 0;
            for _ in 0..200 {
                let mut ix = Index::with_simd(Format::Codex, MAX_MESSAGES_DEFAULT, simd);
                n += ix.feed(0, &file[..end]);
            }
            n
        });
        println!("{simd:?}: feed, hot: {:.2} GB/s", n as f64 / 1e9 / t);
    }
}

#[test]
fn where_the_events_are() {
    struct Count {
        quotes: usize,
        structural: usize,
        lines: usize,
        blocks_with_events: std::collections::HashSet<usize>,
    }
    impl crate::chat::scan::Visit for Count {
        fn quote(&mut self, pos: usize, _: bool, _: u64) -> bool {
            self.quotes += 1;
            self.blocks_with_events.insert(pos / 64);
            true
        }
        fn structural(&mut self, pos: usize, _: u8) -> bool {
            self.structural += 1;
            self.blocks_with_events.insert(pos / 64);
            true
        }
        fn newline(&mut self, pos: usize) -> bool {
            self.lines += 1;
            self.blocks_with_events.insert(pos / 64);
            true
        }
    }
    let file = match std::env::var("CHAT_SPEED_FILE") {
        Ok(path) => std::fs::read(path).expect("CHAT_SPEED_FILE readable"),
        Err(_) => rollout(64 << 20),
    };
    let mut c = Count { quotes: 0, structural: 0, lines: 0, blocks_with_events: Default::default() };
    crate::chat::scan::Simd::detect().scan(&file, &mut c);
    let u = file.windows(2).filter(|w| w == b"\\u").count();
    println!(
        "{} MB: {} lines, {} quotes, {} structural, {:.1}% of blocks with events, {u} \\u",
        file.len() >> 20,
        c.lines,
        c.quotes,
        c.structural,
        100.0 * c.blocks_with_events.len() as f64 / (file.len() / 64) as f64
    );
}

#[test]
fn walker_event_counts() {
    let file = match std::env::var("CHAT_SPEED_FILE") {
        Ok(path) => std::fs::read(path).expect("CHAT_SPEED_FILE readable"),
        Err(_) => rollout(64 << 20),
    };
    struct Count<'a> {
        feed: crate::chat::walk::Walker,
        bytes: &'a [u8],
        quotes: usize,
        structural: usize,
        lines: usize,
    }
    impl crate::chat::scan::Visit for Count<'_> {
        fn quote(&mut self, pos: usize, open: bool, saved: u64) -> bool {
            self.quotes += 1;
            self.feed.quote(self.bytes, pos, open, saved)
        }
        fn structural(&mut self, pos: usize, byte: u8) -> bool {
            self.structural += 1;
            self.feed.structural(self.bytes, pos, byte)
        }
        fn newline(&mut self, pos: usize) -> bool {
            self.lines += 1;
            self.feed.reset(pos + 1);
            true
        }
    }
    let mut c = Count {
        feed: crate::chat::walk::Walker::new(&crate::chat::codex::SCHEMA),
        bytes: &file,
        quotes: 0,
        structural: 0,
        lines: 0,
    };
    c.feed.reset(0);
    crate::chat::scan::Simd::detect().scan(&file, &mut c);
    println!("{} lines: {} quote events, {} structural events delivered", c.lines, c.quotes, c.structural);
}
