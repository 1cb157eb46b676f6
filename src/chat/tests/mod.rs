//! The chat's tests: the seed's, rewritten for this code (`seed`), one per
//! decision of docs/CHAT.md (`decisions`), reads at every offset and window
//! (`reads`), random damage to real lines (`props`), every real
//! transcript in `../shared/data/transcripts` (`real`), pi's and omp's
//! branches (`pi`), and token usage against the raw records (`usage`).

mod decisions;
mod pi;
mod props;
mod reads;
mod real;
mod seed;
// Profiling probes, not checks: see speed.rs.
#[cfg(feature = "speed-probes")]
mod speed;
mod usage;

use super::scan::Simd;
use super::{Format, Index, MAX_MESSAGES_DEFAULT};

/// An index of `file`, fed at once.
fn index(format: Format, file: &[u8]) -> Index {
    let mut ix = Index::new(format, MAX_MESSAGES_DEFAULT);
    ix.feed(0, file);
    ix
}

/// An index of `file` fed the way the server feeds it: a window of `w`
/// bytes from `covered()`, grown when a line does not fit.
fn index_in_windows(format: Format, file: &[u8], w: usize, simd: Simd) -> Index {
    let mut ix = Index::with_simd(format, MAX_MESSAGES_DEFAULT, simd);
    let mut window = w.max(1);
    while (ix.covered() as usize) < file.len() {
        let at = ix.covered() as usize;
        let bytes = &file[at..(at + window).min(file.len())];
        if ix.feed(at as u64, bytes) == 0 {
            if at + window >= file.len() {
                break; // the last line has no newline: it waits
            }
            window *= 2;
        }
    }
    ix
}

/// Bytes `[off, off + count)` of message `id`, read as the server would.
fn read(ix: &mut Index, file: &[u8], id: usize, off: u64, count: u64) -> Vec<u8> {
    let plan = ix.render_plan(id, off, count).expect("a message");
    let input = file.get(plan.file_offset as usize..).unwrap_or(&[]);
    let input = &input[..(plan.file_len as usize).min(input.len())];
    let mut out = Vec::new();
    let n = ix.render(&plan, input, &mut out);
    assert_eq!(n, out.len());
    assert_eq!(n as u64, plan.count(), "a whole input gives every byte asked for");
    out
}

/// The whole of message `id`, as text.
fn text(ix: &mut Index, file: &[u8], id: usize) -> String {
    let size = ix.info(id).expect("a message").size;
    String::from_utf8_lossy(&read(ix, file, id, 0, size)).into_owned()
}

/// Every message's name, space-separated.
fn names(ix: &Index) -> String {
    let mut all = Vec::new();
    for id in 0..ix.len() {
        if id > 0 {
            all.push(b' ');
        }
        assert!(ix.name(id, &mut all));
    }
    String::from_utf8(all).expect("names are ASCII")
}

/// Lines joined with newlines, each ending in one.
fn lines(ls: &[&str]) -> Vec<u8> {
    ls.iter().flat_map(|l| l.bytes().chain([b'\n'])).collect()
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Every message reads, at every offset and a few read sizes, exactly as
/// the slice of its whole text; its size is what a read returns.
fn assert_reads_agree(ix: &mut Index, file: &[u8]) {
    for id in 0..ix.len() {
        let size = ix.info(id).unwrap().size;
        let whole = read(ix, file, id, 0, size + 10);
        assert_eq!(whole.len() as u64, size, "message {id}: a read is as long as its stat");
        for off in 0..=size {
            for count in [1, 2, 3, 5, 8, 13, size] {
                let got = read(ix, file, id, off, count);
                let end = (off + count).min(size) as usize;
                assert_eq!(got, &whole[off as usize..end], "message {id} at {off}+{count}");
            }
        }
    }
}
