//! zstd streams decoded a slice at a time: codex's cold rollouts
//! (`rollout-*.jsonl.zst`) and dsh's transcripts (`session.jsonl.zstd`,
//! appended a frame at a time while the session runs).
//!
//! Pure: the caller reads the compressed bytes (through the ring) and
//! hands over a buffer to decode into; `Inflater::step` decodes as much
//! of one into the other as fits, and says where a frame ended, so a
//! decoding can stop at any point and go on from the last frame's end with
//! a fresh `Inflater` (zstd frames are independent of each other: a file
//! that grew by frames is decoded from where the last complete one
//! ended). libzstd does the decoding (docs/DESIGN.md, "Dependencies").
//!
//! Memory: libzstd's window, at most `2^WINDOW_LOG_MAX` bytes; a frame
//! that asks for more is an error, never a partial answer.

use std::io;

use zstd::stream::raw::{DParameter, Decoder, InBuffer, Operation, OutBuffer};

/// The largest decoding window a frame may ask for, as a power of two:
/// libzstd's own default limit (128 MiB). Frames written by `zstd` at any
/// level up to 19 ask for 8 MiB at most.
pub const WINDOW_LOG_MAX: u32 = 27;

/// zstd's frame magic, little-endian: what a compressed transcript starts
/// with.
pub const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Whether a transcript's name says it is compressed.
pub fn is_compressed(name: &[u8]) -> bool {
    name.ends_with(b".zst") || name.ends_with(b".zstd")
}

/// One stream being decoded.
pub struct Inflater {
    d: Decoder<'static>,
}

/// What one `step` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Input bytes consumed.
    pub read: usize,
    /// Output bytes written.
    pub wrote: usize,
    /// A frame ended at `read`, wholly decoded and written out: a fresh
    /// `Inflater` can go on from there.
    pub frame_end: bool,
}

impl Inflater {
    pub fn new() -> io::Result<Inflater> {
        let mut d = Decoder::new()?;
        d.set_parameter(DParameter::WindowLogMax(WINDOW_LOG_MAX))?;
        Ok(Inflater { d })
    }

    /// Decode from `input` into `out` until either is used up or a frame
    /// ends. An error is a stream that is not zstd, is damaged, or asks for
    /// a window past `WINDOW_LOG_MAX`.
    pub fn step(&mut self, input: &[u8], out: &mut [u8]) -> io::Result<Step> {
        let mut inb = InBuffer::around(input);
        let mut outb = OutBuffer::around(out);
        let hint = self.d.run(&mut inb, &mut outb)?;
        Ok(Step { read: inb.pos(), wrote: outb.pos(), frame_end: hint == 0 })
    }
}

/// The first `max` bytes (or fewer, when `compressed` runs out first) a
/// stream's opening `compressed` bytes decode to: a transcript's head,
/// read without decoding the rest. Its cost is bounded by `max` and by
/// the bytes given.
pub fn head(compressed: &[u8], max: usize) -> io::Result<Vec<u8>> {
    let (mut z, mut out, mut at, mut wrote) = (Inflater::new()?, vec![0; max], 0, 0);
    while wrote < max {
        let s = z.step(&compressed[at..], &mut out[wrote..])?;
        (at, wrote) = (at + s.read, wrote + s.wrote);
        if s.read == 0 && s.wrote == 0 {
            break;
        }
    }
    out.truncate(wrote);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compress(parts: &[&[u8]]) -> Vec<u8> {
        parts.iter().flat_map(|p| zstd::bulk::compress(p, 3).unwrap()).collect()
    }

    /// Where a frame ended: its input and output offsets.
    type Ends = Vec<(usize, usize)>;

    /// Everything `input` decodes to, `slice` bytes of output a step, and
    /// where frames ended.
    fn inflate(input: &[u8], slice: usize) -> io::Result<(Vec<u8>, Ends)> {
        let (mut z, mut out, mut ends, mut at) = (Inflater::new()?, Vec::new(), Vec::new(), 0);
        let mut buf = vec![0; slice];
        loop {
            let s = z.step(&input[at..], &mut buf)?;
            at += s.read;
            out.extend_from_slice(&buf[..s.wrote]);
            if s.frame_end {
                ends.push((at, out.len()));
            }
            if s.read == 0 && s.wrote == 0 {
                return Ok((out, ends));
            }
        }
    }

    #[test]
    fn frames_decode_in_any_slice_and_say_where_they_end() {
        let (a, b) = (b"{\"type\":\"session\"}\n".repeat(50), b"{\"type\":\"message\"}\n".repeat(3000));
        let input = compress(&[&a, &b]);
        let first = zstd::bulk::compress(&a, 3).unwrap().len();
        for slice in [1, 7, 4096, 1 << 20] {
            let (out, ends) = inflate(&input, slice).unwrap();
            assert_eq!(out, [&a[..], &b[..]].concat(), "slice {slice}");
            assert_eq!(ends, [(first, a.len()), (input.len(), a.len() + b.len())], "slice {slice}");
        }
    }

    #[test]
    fn a_stream_cut_mid_frame_decodes_what_it_holds_and_goes_on_from_the_last_frame() {
        let (a, b) = (b"first frame\n".repeat(100), b"second frame\n".repeat(10_000));
        let input = compress(&[&a, &b]);
        let cut = input.len() - 10;
        let (out, ends) = inflate(&input[..cut], 4096).unwrap();
        assert_eq!(ends, [(input.len() - zstd::bulk::compress(&b, 3).unwrap().len(), a.len())]);
        assert!(out.starts_with(&a) && out.len() < a.len() + b.len());
        // Later, the whole file: a fresh decoder from the last frame's end.
        let (rest, _) = inflate(&input[ends[0].0..], 4096).unwrap();
        assert_eq!([&out[..ends[0].1], &rest[..]].concat(), [&a[..], &b[..]].concat());
    }

    #[test]
    fn a_head_is_the_first_bytes_and_needs_only_the_first_compressed_ones() {
        let text = b"{\"type\":\"session_meta\"}\n".repeat(10_000);
        let input = compress(&[&text[..100_000], &text[100_000..]]);
        assert_eq!(head(&input, 1000).unwrap(), &text[..1000]);
        let first = zstd::bulk::compress(&text[..100_000], 3).unwrap().len();
        assert_eq!(head(&input[..first], 150_000).unwrap(), &text[..100_000], "what the bytes given hold");
        assert_eq!(head(&input, 10 << 20).unwrap(), text, "a short stream is its whole self");
        assert!(head(b"plain text", 10).is_err());
    }

    #[test]
    fn what_is_not_zstd_and_a_window_past_the_cap_are_errors() {
        assert!(inflate(b"{\"type\":\"session\"}\n", 64).is_err());
        // A frame header whose window descriptor (0xd8) asks for a window
        // of 2^37 bytes: refused before any output.
        let huge = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xd8, 0x01, 0x00, 0x00];
        assert!(inflate(&huge, 64).is_err());
        assert!(is_compressed(b"rollout-x.jsonl.zst") && is_compressed(b"session.jsonl.zstd"));
        assert!(!is_compressed(b"rollout-x.jsonl"));
    }
}
