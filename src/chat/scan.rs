//! The structural scan: where strings open and close, where `{}[]:,`
//! stand outside strings, and where lines end — 64 bytes at a time, as
//! bitmasks (the simdjson method).
//!
//! Most of a transcript's bytes are inside strings: tool output that is
//! JSON inside JSON, base64 reasoning. A walk that stops at every quote
//! (the seed's memchr loop) pays per quote and per backslash run; here a
//! block of 64 bytes is classified at once (`Classes`), and plain bit
//! arithmetic finds which quotes are escaped (odd backslash runs), which
//! bytes are inside strings (a prefix XOR of the unescaped quotes) and so
//! which structural bytes count. A block wholly inside a string produces no
//! event at all. The walk (`Visit`) sees only the events, in file order.
//!
//! The scan also measures strings without decoding them: every escape
//! saves input bytes (`\n` is two bytes in, one out), so a string renders
//! to its length minus the savings between its quotes. Single-byte escapes
//! are counted with a popcount; `\u` escapes and malformed ones, which are
//! rare, are looked at one by one with the renderer's own rules
//! (`escape::unit`), so the measure and the rendering always agree.
//!
//! A line is a record: a newline ends it even inside a string (malformed
//! JSON never escapes its line), and the in-string state restarts after it.
//!
//! A visitor that has what it needs of a line says so, and the rest of the
//! line reports only its end.
//!
//! Classification has four implementations with identical results:
//! AVX-512 BW, AVX2 and SSE2 (x86-64, chosen at run time) and scalar
//! (everything else, and the reference the tests hold the others to).

use super::escape;

/// Bytes classified at once.
pub(crate) const BLOCK: usize = 64;

/// How far ahead of the block being classified the scan asks for memory:
/// a window straight from a large mapping is otherwise read at the speed
/// of one cache miss at a time.
const PREFETCH: usize = 4096;

/// One block's bytes by class, bit i for byte i.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Classes {
    pub quote: u64,
    pub backslash: u64,
    pub newline: u64,
    /// `{ } [ ] : ,`
    pub structural: u64,
    /// The bytes a single-byte escape may name: `" \ / b f n r t`.
    pub simple: u64,
}

/// A way to classify a block.
pub(crate) trait Classify {
    /// # Safety
    /// The CPU must have the features the implementation uses (`Simd::detect`
    /// picked it).
    unsafe fn classify(block: &[u8; BLOCK]) -> Classes;

    /// The classes every block needs — quotes, backslashes, newlines —
    /// leaving `structural` and `simple` to `rest`, which a block wholly
    /// inside one string never asks for (one with an escape asks
    /// `rest_simple`). By default, all of `classify`.
    ///
    /// # Safety
    /// As `classify`.
    #[inline(always)]
    unsafe fn basic(block: &[u8; BLOCK]) -> Classes {
        // SAFETY: forwarded from this function's contract.
        unsafe { Self::classify(block) }
    }

    /// Fills in `structural` and `simple` after `basic`. By default
    /// nothing: `basic` gave them.
    ///
    /// # Safety
    /// As `classify`.
    #[inline(always)]
    unsafe fn rest(_block: &[u8; BLOCK], _c: &mut Classes) {}

    /// Only `simple`, for a block wholly inside a string with an escape
    /// (whose structural bytes are text). By default all of `rest`.
    ///
    /// # Safety
    /// As `classify`.
    #[inline(always)]
    unsafe fn rest_simple(block: &[u8; BLOCK], c: &mut Classes) {
        // SAFETY: forwarded from this function's contract.
        unsafe { Self::rest(block, c) }
    }

    /// Bit i set when an odd number of bits at or below i are set.
    #[inline(always)]
    fn prefix_xor(x: u64) -> u64 {
        prefix_xor(x)
    }

    /// A hint that the line holding `at` will be read soon.
    #[inline(always)]
    fn prefetch(_at: &u8) {}

    /// The events of a block that has some, out of line.
    ///
    /// # Safety
    /// As `classify`.
    #[inline(never)]
    unsafe fn block_with_events<V: Visit>(
        events: u64,
        m: Masks,
        k: After,
        bytes: &[u8],
        base: usize,
        v: &mut V,
    ) -> Option<After> {
        block_with_events(events, m, k, bytes, base, v)
    }
}

/// What the scan reports, in file order. Positions are indexes into the
/// scanned bytes.
pub(crate) trait Visit {
    /// A quote that opens (`open`) or closes a string; `saved` is how many
    /// bytes the escapes before `pos` save (a running total: subtract the
    /// value at the opening quote from the value at the closing one).
    /// False when the rest of the line does not matter: only its end is
    /// reported then.
    fn quote(&mut self, pos: usize, open: bool, saved: u64) -> bool;
    /// One of `{ } [ ] : ,` outside strings. False as for `quote`.
    fn structural(&mut self, pos: usize, byte: u8) -> bool;
    /// A line ends at `pos`. False stops the scan.
    fn newline(&mut self, pos: usize) -> bool;
}

/// The classifier this CPU runs best.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Simd {
    Avx512,
    Avx2,
    Sse2,
    Scalar,
}

impl Simd {
    /// The classifier's name, as `chat::scan_path` reports it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Simd::Avx512 => "avx512",
            Simd::Avx2 => "avx2",
            Simd::Sse2 => "sse2",
            Simd::Scalar => "scalar",
        }
    }

    /// Every classifier this CPU runs, best first.
    pub(crate) fn available() -> Vec<Simd> {
        let mut all = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if avx512_detected() {
                all.push(Simd::Avx512);
            }
            if avx2_detected() {
                all.push(Simd::Avx2);
            }
            all.push(Simd::Sse2);
        }
        all.push(Simd::Scalar);
        all
    }

    pub(crate) fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            if avx512_detected() {
                return Simd::Avx512;
            }
            if avx2_detected() {
                return Simd::Avx2;
            }
            return Simd::Sse2;
        }
        #[allow(unreachable_code)]
        Simd::Scalar
    }

    /// Scans `bytes` with this classifier. False when the visitor stopped.
    pub(crate) fn scan<V: Visit>(self, bytes: &[u8], v: &mut V) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Avx512` is only chosen when the CPU reports AVX-512
            // BW and the rest `scan_avx512` enables (`detect`, or a test
            // that checked the same).
            Simd::Avx512 => unsafe { x86::scan_avx512(bytes, v) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Avx2` is only chosen when the CPU reports AVX2 and
            // the rest `scan_avx2` enables (`detect`, or a test that
            // checked the same).
            Simd::Avx2 => unsafe { x86::scan_avx2(bytes, v) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: SSE2 is part of the x86-64 baseline.
            Simd::Sse2 => unsafe { scan::<x86::Sse2, V>(bytes, v) },
            // SAFETY: the scalar classifier needs no CPU feature.
            _ => unsafe { scan::<Scalar, V>(bytes, v) },
        }
    }
}

/// AVX2, and the bit instructions the AVX2 scan uses with it.
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx2_detected() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("avx2") && has!("bmi1") && has!("bmi2") && has!("popcnt") && has!("pclmulqdq")
}

/// AVX-512 (BW, for bytes), and the same bit instructions.
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx512_detected() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("avx512f") && has!("avx512bw") && avx2_detected()
}

/// All five classes of a block, for a classifier that splits them
/// (`Classify::basic` then `Classify::rest`).
///
/// # Safety
/// As `Classify::classify`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn basic_and_rest<C: Classify>(block: &[u8; BLOCK]) -> Classes {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        let mut c = C::basic(block);
        C::rest(block, &mut c);
        c
    }
}

/// What a block hands the next one.
struct Carry {
    /// The first byte of the next block is escaped (0 or 1).
    escaped: u64,
    /// Inside a string at the end of the block (all ones or zero).
    in_string: u64,
    /// Running total of bytes saved by escapes.
    saved: u64,
    /// Position of a `\u` that is the second half of a surrogate pair
    /// already counted with its first.
    low_half: usize,
    /// The visitor wants nothing more of this line but its end.
    line_done: bool,
}

/// Scans `bytes` block by block. The last, short block is padded with
/// spaces, which are in no class.
///
/// # Safety
/// The CPU must support `C` (see `Classify::classify`).
#[inline(always)]
pub(crate) unsafe fn scan<C: Classify, V: Visit>(bytes: &[u8], v: &mut V) -> bool {
    let mut k = Carry { escaped: 0, in_string: 0, saved: 0, low_half: usize::MAX, line_done: false };
    let mut base = 0;
    // The whole blocks, in a loop that calls nothing but the visitor's
    // out-of-line events: the short last block's copy stays outside it, so
    // the classifier's constants can stay in registers.
    while let Some(block) = bytes.get(base..).and_then(|rest| rest.first_chunk::<BLOCK>()) {
        if let Some(ahead) = bytes.get(base + PREFETCH) {
            C::prefetch(ahead);
        }
        // SAFETY: forwarded from this function's contract.
        let mut classes = unsafe { C::basic(block) };
        if !step::<C, V>(&mut classes, block, bytes, base, &mut k, v) {
            return false;
        }
        base += BLOCK;
    }
    let rest = bytes.get(base..).unwrap_or(&[]);
    if rest.is_empty() {
        return true;
    }
    let mut pad = [b' '; BLOCK];
    pad[..rest.len()].copy_from_slice(rest);
    // SAFETY: forwarded from this function's contract.
    let mut classes = unsafe { C::basic(&pad) };
    step::<C, V>(&mut classes, &pad, bytes, base, &mut k, v)
}

/// One block: the masks from its classes, then its events in order. Most
/// blocks of a transcript are inside a string and have no event and no
/// `\u` escape: for them this is a few dozen bit operations.
#[inline(always)]
fn step<C: Classify, V: Visit>(
    c: &mut Classes,
    block: &[u8; BLOCK],
    bytes: &[u8],
    base: usize,
    k: &mut Carry,
    v: &mut V,
) -> bool {
    let escaped = escaped(c.backslash, &mut k.escaped);
    let quotes = c.quote & !escaped;
    let mut inside = C::prefix_xor(quotes) ^ k.in_string;
    if c.newline & inside != 0 {
        inside = restart_at_newlines(inside, c.newline);
    }
    k.in_string = 0u64.wrapping_sub(inside >> 63);
    // Structural bytes count only outside strings, and the escape classes
    // only where something is escaped: a block wholly inside a string
    // needs only the simple escapes, and only if it has an escape.
    if inside != !0 {
        // SAFETY: forwarded from `scan`'s contract.
        unsafe { C::rest(block, c) };
    } else if escaped != 0 {
        // SAFETY: as above.
        unsafe { C::rest_simple(block, c) };
    }
    let simple = escaped & c.simple;
    let mut events = (c.structural & !inside) | quotes | c.newline;
    let mut other = escaped & !c.simple;
    if k.line_done {
        // Only the line's end matters, and what follows it; the savings of
        // a line no one reads are never asked for (strings are measured
        // within a line).
        let from = from_first(c.newline);
        events &= from;
        other &= from;
    }
    if events | other == 0 {
        k.saved += u64::from(simple.count_ones());
        return true;
    }
    let m = Masks { quotes, inside, newline: c.newline, simple, other };
    let before = After { saved: k.saved, low_half: k.low_half, line_done: k.line_done };
    // SAFETY: forwarded from `scan`'s contract.
    match unsafe { C::block_with_events(events, m, before, bytes, base, v) } {
        Some(after) => {
            (k.saved, k.low_half, k.line_done) = (after.saved, after.low_half, after.line_done);
            true
        }
        None => false,
    }
}

/// The carries a block with events hands on, passed by value so the
/// scan's own stay in registers.
pub(crate) struct After {
    saved: u64,
    low_half: usize,
    line_done: bool,
}

/// A block with events or `\u` escapes: kept out of the loop above, whose
/// registers are better spent on the blocks that have neither. Returns the
/// carries after the block; `None` when the visitor stopped.
#[inline(always)]
fn block_with_events<V: Visit>(
    events: u64,
    m: Masks,
    mut k: After,
    bytes: &[u8],
    base: usize,
    v: &mut V,
) -> Option<After> {
    let fix = if m.other == 0 { Fixups::default() } else { fixups(m.other, bytes, base, &mut k.low_half) };
    k.line_done = events_in_order(events, &m, &fix, bytes, base, k.saved, v)?;
    k.saved += u64::from(m.simple.count_ones()) + fix.sum(!0);
    Some(k)
}

/// What the events of a block are told apart by.
pub(crate) struct Masks {
    quotes: u64,
    inside: u64,
    newline: u64,
    simple: u64,
    other: u64,
}

/// Hands the block's events to the visitor in order. Returns whether the
/// line open at the block's end is done with (`None`: the visitor stopped).
#[inline(always)]
fn events_in_order<V: Visit>(
    mut events: u64,
    m: &Masks,
    fix: &Fixups,
    bytes: &[u8],
    base: usize,
    saved: u64,
    v: &mut V,
) -> Option<bool> {
    let mut line_done = false;
    while events != 0 {
        let i = events.trailing_zeros();
        events &= events - 1;
        let bit = 1u64 << i;
        let pos = base + i as usize;
        let more = if m.newline & bit != 0 {
            if !v.newline(pos) {
                return None;
            }
            line_done = false;
            true
        } else if m.quotes & bit != 0 {
            let below = bit - 1;
            let mut saved = saved + u64::from((m.simple & below).count_ones());
            if m.other != 0 {
                saved += fix.sum(below);
            }
            v.quote(pos, m.inside & bit != 0, saved)
        } else {
            bytes.get(pos).is_none_or(|&b| v.structural(pos, b))
        };
        if !more {
            line_done = true;
            // Newlines after this event: `bit | (bit - 1)` is it and below.
            events &= from_first(m.newline & !(bit | (bit - 1)));
        }
    }
    Some(line_done)
}

/// The bits from the lowest set bit of `m` up (none when `m` is empty).
#[inline(always)]
fn from_first(m: u64) -> u64 {
    if m == 0 {
        0
    } else {
        !((m & m.wrapping_neg()) - 1)
    }
}

/// Which bytes are escaped: the byte after each backslash that is not
/// itself escaped. `next` carries an escape over the block's edge. (The
/// simdjson escape scanner: subtraction turns each backslash run into its
/// parity.)
#[inline(always)]
pub(crate) fn escaped(backslash: u64, next: &mut u64) -> u64 {
    const ODD: u64 = 0xAAAA_AAAA_AAAA_AAAA;
    if backslash == 0 {
        return std::mem::take(next);
    }
    let potential = backslash & !*next;
    let maybe_escaped = potential << 1;
    let code = ((maybe_escaped | ODD).wrapping_sub(potential)) ^ ODD;
    let escaped = code ^ (backslash | *next);
    *next = (code & backslash) >> 63;
    escaped
}

/// Bit i set when an odd number of bits at or below i are set.
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// A newline inside a string ends the line anyway: everything after it is
/// counted afresh, outside any string. (Only malformed lines get here.)
#[cold]
fn restart_at_newlines(mut inside: u64, newline: u64) -> u64 {
    loop {
        let bad = newline & inside;
        if bad == 0 {
            return inside;
        }
        let i = bad.trailing_zeros();
        inside ^= (!0u64).checked_shl(i + 1).unwrap_or(0);
        inside &= !(1u64 << i);
    }
}

/// Savings of the escapes a popcount cannot count, by amount: a `\u` that
/// renders to one byte saves 5, two bytes 4, three 3, a surrogate pair 8;
/// an escape written as it stands saves nothing.
#[derive(Default)]
struct Fixups {
    save3: u64,
    save4: u64,
    save5: u64,
    save8: u64,
}

impl Fixups {
    #[inline(always)]
    fn sum(&self, mask: u64) -> u64 {
        let n = |m: u64| u64::from((m & mask).count_ones());
        3 * n(self.save3) + 4 * n(self.save4) + 5 * n(self.save5) + 8 * n(self.save8)
    }
}

#[cold]
fn fixups(mut other: u64, bytes: &[u8], base: usize, low_half: &mut usize) -> Fixups {
    let mut f = Fixups::default();
    while other != 0 {
        let i = other.trailing_zeros();
        other &= other - 1;
        let pos = base + i as usize;
        if pos == *low_half || bytes.get(pos) != Some(&b'u') {
            continue;
        }
        let Some(at) = pos.checked_sub(1).and_then(|p| bytes.get(p..)) else { continue };
        let u = escape::unit(at);
        let bit = 1u64 << i;
        match (u.taken, u.out) {
            (12, _) => {
                f.save8 |= bit;
                *low_half = pos + 6;
            }
            (6, 1) => f.save5 |= bit,
            (6, 2) => f.save4 |= bit,
            (6, _) => f.save3 |= bit,
            _ => {}
        }
    }
    f
}

/// The reference classifier, one byte at a time.
pub(crate) struct Scalar;

const Q: u8 = 1;
const B: u8 = 2;
const N: u8 = 4;
const S: u8 = 8;
const E: u8 = 16;

const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'"' as usize] = Q | E;
    t[b'\\' as usize] = B | E;
    t[b'\n' as usize] = N;
    let structural = *b"{}[]:,";
    let mut i = 0;
    while i < structural.len() {
        t[structural[i] as usize] = S;
        i += 1;
    }
    let simple = *b"/bfnrt";
    let mut i = 0;
    while i < simple.len() {
        t[simple[i] as usize] = E;
        i += 1;
    }
    t
};

impl Classify for Scalar {
    unsafe fn classify(block: &[u8; BLOCK]) -> Classes {
        let mut c = Classes::default();
        for (i, &b) in block.iter().enumerate() {
            let k = CLASS[usize::from(b)];
            let bit = 1u64 << i;
            let on = |f: u8| if k & f != 0 { bit } else { 0 };
            c.quote |= on(Q);
            c.backslash |= on(B);
            c.newline |= on(N);
            c.structural |= on(S);
            c.simple |= on(E);
        }
        c
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! AVX2 and SSE2 classifiers. AVX2 sorts bytes into classes with two
    //! nibble lookups (`vpshufb`): each class bit is a set of low nibbles
    //! times a set of high nibbles, and a byte is in a class when both of
    //! its nibbles' table entries have the bit. SSE2 has no byte shuffle,
    //! so it compares against each byte of each class.

    use super::{scan, After, Classes, Classify, Masks, Visit, BLOCK};
    use std::arch::x86_64::*;

    /// Class bits, by (high nibbles) × (low nibbles):
    /// 0 `,` {2}×{C}; 1 `:` {3}×{A}; 2 `[ ] { }` {5,7}×{B,D};
    /// 3 `" /` {2}×{2,F}; 4 `\` {5}×{C}; 5 `b f n` {6}×{2,6,E};
    /// 6 `r t` {7}×{2,4}. Bits 0–2 are structural, 3–6 simple escapes.
    const LOW: [u8; 16] = [0, 0, 0x68, 0, 0x40, 0, 0x20, 0, 0, 0, 0x02, 0x04, 0x11, 0x04, 0x20, 0x08];
    const HIGH: [u8; 16] = [0, 0, 0x09, 0x02, 0, 0x14, 0x20, 0x44, 0, 0, 0, 0, 0, 0, 0, 0];
    const STRUCTURAL: i8 = 0x07;
    const SIMPLE: i8 = 0x78;

    /// Scans with AVX2 (and the bit instructions every AVX2 CPU has:
    /// BMI, POPCNT, carry-less multiply) throughout, so it all inlines.
    ///
    /// # Safety
    /// The CPU must have those features (`Simd::detect` checks each).
    #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,pclmulqdq")]
    pub(super) unsafe fn scan_avx2<V: Visit>(bytes: &[u8], v: &mut V) -> bool {
        // SAFETY: this function's contract is the features'.
        unsafe { scan::<Avx2, V>(bytes, v) }
    }

    pub(crate) struct Avx2;

    /// A block's events with the bit instructions at hand.
    ///
    /// # Safety
    /// The CPU must have the features enabled.
    #[inline(never)]
    #[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
    unsafe fn events_avx2<V: Visit>(
        events: u64,
        m: Masks,
        k: After,
        bytes: &[u8],
        base: usize,
        v: &mut V,
    ) -> Option<After> {
        super::block_with_events(events, m, k, bytes, base, v)
    }

    impl Classify for Avx2 {
        #[inline(always)]
        unsafe fn classify(block: &[u8; BLOCK]) -> Classes {
            // SAFETY: the caller has checked AVX2 (the trait's contract).
            unsafe { super::basic_and_rest::<Self>(block) }
        }

        #[inline(always)]
        unsafe fn basic(block: &[u8; BLOCK]) -> Classes {
            // SAFETY: as `classify`.
            unsafe {
                let lo = basic_avx2(block.as_ptr());
                let hi = basic_avx2(block.as_ptr().add(32));
                Classes {
                    quote: join(lo[0], hi[0]),
                    backslash: join(lo[1], hi[1]),
                    newline: join(lo[2], hi[2]),
                    structural: 0,
                    simple: 0,
                }
            }
        }

        #[inline(always)]
        unsafe fn rest(block: &[u8; BLOCK], c: &mut Classes) {
            // SAFETY: as `classify`.
            unsafe {
                let lo = rest_avx2(block.as_ptr());
                let hi = rest_avx2(block.as_ptr().add(32));
                c.structural = join(lo[0], hi[0]);
                c.simple = join(lo[1], hi[1]);
            }
        }

        #[inline(always)]
        unsafe fn rest_simple(block: &[u8; BLOCK], c: &mut Classes) {
            // SAFETY: as `classify`.
            unsafe {
                let lo = simple_avx2(block.as_ptr());
                let hi = simple_avx2(block.as_ptr().add(32));
                c.simple = join(lo, hi);
            }
        }

        #[inline(always)]
        unsafe fn block_with_events<V: Visit>(
            events: u64,
            m: Masks,
            k: After,
            bytes: &[u8],
            base: usize,
            v: &mut V,
        ) -> Option<After> {
            // SAFETY: the trait's contract: the CPU has these features.
            unsafe { events_avx2(events, m, k, bytes, base, v) }
        }

        #[inline(always)]
        fn prefetch(at: &u8) {
            // SAFETY: a prefetch is a hint; it reads nothing and cannot fault.
            unsafe { _mm_prefetch::<_MM_HINT_T0>((at as *const u8).cast()) }
        }

        /// A carry-less multiply by all ones is a prefix XOR.
        #[inline(always)]
        fn prefix_xor(x: u64) -> u64 {
            // SAFETY: `Avx2` is only used where PCLMULQDQ was detected
            // (`Simd::detect`), inside `scan_avx2`, which enables it.
            unsafe {
                let ones = _mm_set1_epi8(-1);
                let product = _mm_clmulepi64_si128::<0>(_mm_set_epi64x(0, x as i64), ones);
                _mm_cvtsi128_si64(product) as u64
            }
        }
    }

    /// Two halves' masks as one block's.
    #[inline(always)]
    fn join(a: u32, b: u32) -> u64 {
        u64::from(a) | (u64::from(b) << 32)
    }

    /// The quote, backslash and newline masks of 32 bytes at `p`.
    ///
    /// # Safety
    /// AVX2, and 32 readable bytes at `p`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn basic_avx2(p: *const u8) -> [u32; 3] {
        // SAFETY: the caller guarantees 32 readable bytes; loadu has no
        // alignment requirement.
        let v = unsafe { _mm256_loadu_si256(p.cast()) };
        let eq = |b: u8| _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b as i8))) as u32;
        [eq(b'"'), eq(b'\\'), eq(b'\n')]
    }

    /// The class bits (`LOW` × `HIGH`) of each of 32 bytes at `p`.
    ///
    /// # Safety
    /// AVX2, and 32 readable bytes at `p`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn class_avx2(p: *const u8) -> __m256i {
        // SAFETY: the caller guarantees 32 readable bytes; loadu has no
        // alignment requirement.
        let v = unsafe { _mm256_loadu_si256(p.cast()) };
        let table = |t: &[u8; 16]| {
            // SAFETY: 16 readable bytes in `t`.
            let x = unsafe { _mm_loadu_si128(t.as_ptr().cast()) };
            _mm256_broadcastsi128_si256(x)
        };
        let nib = _mm256_set1_epi8(0x0f);
        let lo = _mm256_shuffle_epi8(table(&LOW), _mm256_and_si256(v, nib));
        let hi = _mm256_shuffle_epi8(table(&HIGH), _mm256_and_si256(_mm256_srli_epi16::<4>(v), nib));
        _mm256_and_si256(lo, hi)
    }

    /// Which of the 32 bytes have any of `bits` among their classes.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn has_avx2(class: __m256i, bits: i8) -> u32 {
        let none = _mm256_cmpeq_epi8(_mm256_and_si256(class, _mm256_set1_epi8(bits)), _mm256_setzero_si256());
        !(_mm256_movemask_epi8(none) as u32)
    }

    /// The structural and simple-escape masks of 32 bytes at `p`.
    ///
    /// # Safety
    /// As `class_avx2`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn rest_avx2(p: *const u8) -> [u32; 2] {
        // SAFETY: forwarded from this function's contract.
        let class = unsafe { class_avx2(p) };
        [has_avx2(class, STRUCTURAL), has_avx2(class, SIMPLE)]
    }

    /// The simple-escape mask of 32 bytes at `p`.
    ///
    /// # Safety
    /// As `class_avx2`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn simple_avx2(p: *const u8) -> u32 {
        // SAFETY: forwarded from this function's contract.
        has_avx2(unsafe { class_avx2(p) }, SIMPLE)
    }

    /// Scans with AVX-512 BW: a block is one register, and a comparison
    /// gives its mask directly.
    ///
    /// # Safety
    /// The CPU must have those features (`Simd::detect` checks each).
    #[target_feature(enable = "avx512f,avx512bw,avx2,bmi1,bmi2,popcnt,pclmulqdq")]
    pub(super) unsafe fn scan_avx512<V: Visit>(bytes: &[u8], v: &mut V) -> bool {
        // SAFETY: this function's contract is the features'.
        unsafe { scan::<Avx512, V>(bytes, v) }
    }

    pub(crate) struct Avx512;

    impl Classify for Avx512 {
        #[inline(always)]
        unsafe fn classify(block: &[u8; BLOCK]) -> Classes {
            // SAFETY: the caller has checked AVX-512 BW (the trait's
            // contract); `block` is 64 readable bytes, and loadu has no
            // alignment requirement.
            unsafe { super::basic_and_rest::<Self>(block) }
        }

        #[inline(always)]
        unsafe fn basic(block: &[u8; BLOCK]) -> Classes {
            // SAFETY: as `classify`.
            unsafe {
                let v = _mm512_loadu_si512(block.as_ptr().cast());
                let eq = |b: u8| _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b as i8));
                Classes { quote: eq(b'"'), backslash: eq(b'\\'), newline: eq(b'\n'), structural: 0, simple: 0 }
            }
        }

        #[inline(always)]
        unsafe fn rest(block: &[u8; BLOCK], c: &mut Classes) {
            // SAFETY: as `classify`: the caller checked AVX-512BW.
            unsafe {
                let class = class_avx512(block);
                c.structural = _mm512_test_epi8_mask(class, _mm512_set1_epi8(STRUCTURAL));
                c.simple = _mm512_test_epi8_mask(class, _mm512_set1_epi8(SIMPLE));
            }
        }

        #[inline(always)]
        unsafe fn rest_simple(block: &[u8; BLOCK], c: &mut Classes) {
            // SAFETY: as `classify`: the caller checked AVX-512BW.
            c.simple = unsafe { _mm512_test_epi8_mask(class_avx512(block), _mm512_set1_epi8(SIMPLE)) };
        }

        #[inline(always)]
        unsafe fn block_with_events<V: Visit>(
            events: u64,
            m: Masks,
            k: After,
            bytes: &[u8],
            base: usize,
            v: &mut V,
        ) -> Option<After> {
            // SAFETY: the trait's contract: the CPU has these features.
            unsafe { events_avx2(events, m, k, bytes, base, v) }
        }

        #[inline(always)]
        fn prefetch(at: &u8) {
            Avx2::prefetch(at);
        }

        #[inline(always)]
        fn prefix_xor(x: u64) -> u64 {
            Avx2::prefix_xor(x)
        }
    }

    /// The class bits (`LOW` × `HIGH`) of each byte of a block.
    ///
    /// # Safety
    /// AVX-512 BW.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn class_avx512(block: &[u8; BLOCK]) -> __m512i {
        // SAFETY: `block` is 64 readable bytes and loadu has no alignment
        // requirement; `LOW` and `HIGH` are 16 each.
        unsafe {
            let v = _mm512_loadu_si512(block.as_ptr().cast());
            let table = |t: &[u8; 16]| _mm512_broadcast_i32x4(_mm_loadu_si128(t.as_ptr().cast()));
            let nib = _mm512_set1_epi8(0x0f);
            let lo = _mm512_shuffle_epi8(table(&LOW), _mm512_and_si512(v, nib));
            let hi = _mm512_shuffle_epi8(table(&HIGH), _mm512_and_si512(_mm512_srli_epi16::<4>(v), nib));
            _mm512_and_si512(lo, hi)
        }
    }

    pub(crate) struct Sse2;

    impl Classify for Sse2 {
        #[inline(always)]
        unsafe fn classify(block: &[u8; BLOCK]) -> Classes {
            let mut c = Classes::default();
            for q in 0..4 {
                // SAFETY: q * 16 + 16 <= BLOCK bytes of `block` are readable.
                let m = unsafe { quarter_sse2(block.as_ptr().add(q * 16)) };
                let at = |x: u32| u64::from(x) << (q * 16);
                c.quote |= at(m[0]);
                c.backslash |= at(m[1]);
                c.newline |= at(m[2]);
                c.structural |= at(m[3]);
                c.simple |= at(m[4]);
            }
            c
        }
    }

    /// The five class masks of 16 bytes at `p`.
    ///
    /// # Safety
    /// 16 readable bytes at `p` (SSE2 is baseline on x86-64).
    #[inline(always)]
    unsafe fn quarter_sse2(p: *const u8) -> [u32; 5] {
        // SAFETY: the caller guarantees 16 readable bytes; SSE2 is
        // baseline on x86-64, so every intrinsic here may run.
        unsafe {
            let v = _mm_loadu_si128(p.cast());
            let is = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
            let any = |bytes: &[u8]| bytes.iter().fold(_mm_setzero_si128(), |m, &b| _mm_or_si128(m, is(b)));
            let mask = |m: __m128i| _mm_movemask_epi8(m) as u32;
            [mask(is(b'"')), mask(is(b'\\')), mask(is(b'\n')), mask(any(b"{}[]:,")), mask(any(b"\"\\/bfnrt"))]
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every event, as the walk would see it.
    #[derive(Default, Debug, PartialEq, Eq)]
    pub(crate) struct Record(pub Vec<(usize, u8, u64)>);

    impl Visit for Record {
        fn quote(&mut self, pos: usize, open: bool, saved: u64) -> bool {
            self.0.push((pos, if open { b'<' } else { b'>' }, saved));
            true
        }
        fn structural(&mut self, pos: usize, byte: u8) -> bool {
            self.0.push((pos, byte, 0));
            true
        }
        fn newline(&mut self, pos: usize) -> bool {
            self.0.push((pos, b'\n', 0));
            true
        }
    }

    /// The classifiers this machine can run.
    pub(crate) fn all_simd() -> Vec<Simd> {
        let mut v = vec![Simd::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            v.push(Simd::Sse2);
            if avx2_detected() {
                v.push(Simd::Avx2);
            }
            if avx512_detected() {
                v.push(Simd::Avx512);
            }
        }
        v
    }

    fn events(simd: Simd, bytes: &[u8]) -> Vec<(usize, u8, u64)> {
        let mut r = Record::default();
        simd.scan(bytes, &mut r);
        r.0
    }

    /// The escaped bytes, one at a time.
    fn escaped_reference(bytes: &[u8]) -> Vec<bool> {
        let mut out = vec![false; bytes.len()];
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'\\' && i + 1 < bytes.len() {
                out[i + 1] = true;
                i += 2;
            } else {
                i += 1;
            }
        }
        out
    }

    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn every_classifier_sorts_every_byte_the_same() {
        let mut block = [0u8; BLOCK];
        for start in (0..256).step_by(BLOCK) {
            for (i, b) in block.iter_mut().enumerate() {
                *b = (start + i) as u8;
            }
            // SAFETY: the scalar classifier needs no feature.
            let want = unsafe { Scalar::classify(&block) };
            for simd in all_simd() {
                let got = classify_with(simd, &block);
                assert_eq!(got, want, "{simd:?} at {start}");
            }
        }
    }

    fn classify_with(simd: Simd, block: &[u8; BLOCK]) -> Classes {
        // SAFETY: `all_simd` only lists what this CPU runs.
        unsafe {
            match simd {
                #[cfg(target_arch = "x86_64")]
                Simd::Avx512 => x86::Avx512::classify(block),
                #[cfg(target_arch = "x86_64")]
                Simd::Avx2 => x86::Avx2::classify(block),
                #[cfg(target_arch = "x86_64")]
                Simd::Sse2 => x86::Sse2::classify(block),
                _ => Scalar::classify(block),
            }
        }
    }

    #[test]
    fn escapes_follow_odd_runs_of_backslashes_across_blocks() {
        let mut seed = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..2000 {
            let len = (xorshift(&mut seed) % 300) as usize;
            let bytes: Vec<u8> =
                (0..len).map(|_| if xorshift(&mut seed).is_multiple_of(3) { b'a' } else { b'\\' }).collect();
            let want = escaped_reference(&bytes);
            let mut next = 0;
            for (b, chunk) in bytes.chunks(BLOCK).enumerate() {
                let mask = chunk.iter().enumerate().fold(0u64, |m, (i, &c)| m | (u64::from(c == b'\\') << i));
                let got = escaped(mask, &mut next);
                for (i, _) in chunk.iter().enumerate() {
                    assert_eq!(got >> i & 1 == 1, want[b * BLOCK + i], "byte {}", b * BLOCK + i);
                }
            }
        }
    }

    #[test]
    fn quotes_open_and_close_strings_and_structure_inside_them_is_text() {
        let line = br#"{"a":"x\"{,}\\","b":[1,2]}"#;
        let got: Vec<u8> = events(Simd::Scalar, line).iter().map(|e| e.1).collect();
        assert_eq!(got, b"{<>:<>,<>:[,]}");
    }

    #[test]
    fn a_string_measures_its_length_less_what_its_escapes_save() {
        // \" saves 1, \\ 1, \u00e9 4 (two bytes out), the pair 8, \x none.
        let line = br#"{"k":"a\"b\\c\u00e9\ud83d\ude00\x"}"#;
        let ev = events(Simd::Scalar, line);
        let (open, close) = (ev[4], ev[5]);
        assert_eq!((open.1, close.1), (b'<', b'>'));
        assert_eq!(close.2 - open.2, 1 + 1 + 4 + 8);
    }

    #[test]
    fn a_newline_ends_a_string_left_open() {
        let text = b"{\"a\":\"open\n{\"b\":1}\n";
        let got: Vec<u8> = events(Simd::Scalar, text).iter().map(|e| e.1).collect();
        assert_eq!(got, b"{<>:<\n{<>:}\n");
    }

    #[test]
    fn every_classifier_measures_long_strings_the_same_as_structure_in_them_is_text() {
        // Strings longer than a block, so some blocks are wholly inside one,
        // with and without escapes (the classifiers' short cuts), and with
        // structural bytes that must stay text.
        let tokens: [&[u8]; 12] =
            [b"a", b"{", b"}", b":", b",", b"[", b"\\n", b"\\\"", b"\\\\", b"\\u00e9", b"\\x", b" "];
        let mut seed = 0x0DDB_A11C_AFE0_F00D;
        for round in 0..400 {
            let mut line = b"{\"k\":\"".to_vec();
            let escapes = round % 2 == 0;
            for _ in 0..(xorshift(&mut seed) % 600) {
                let t = tokens[(xorshift(&mut seed) % tokens.len() as u64) as usize];
                if escapes || !t.starts_with(b"\\") {
                    line.extend_from_slice(t);
                }
            }
            line.extend_from_slice(b"\",\"n\":[1,{\"a\":\"b\"}]}\n");
            let want = events(Simd::Scalar, &line);
            assert_eq!(want.iter().filter(|e| e.1 == b'<').count(), 5, "round {round}: the long string hid no quote");
            let structural = want.iter().filter(|e| !matches!(e.1, b'<' | b'>' | b'\n')).count();
            assert_eq!(structural, 11, "round {round}: only the bytes outside the strings are structure");
            for simd in all_simd() {
                assert_eq!(events(simd, &line), want, "{simd:?}, round {round}");
            }
        }
    }

    #[test]
    fn every_classifier_gives_the_same_events_on_random_json_ish_bytes() {
        let alphabet = b"\"\\{}[]:,\nabu0e9dD8 /";
        let mut seed = 0x0123_4567_89AB_CDEF;
        for round in 0..3000 {
            let len = (xorshift(&mut seed) % 400) as usize;
            let bytes: Vec<u8> =
                (0..len).map(|_| alphabet[(xorshift(&mut seed) % alphabet.len() as u64) as usize]).collect();
            let want = events(Simd::Scalar, &bytes);
            for simd in all_simd() {
                assert_eq!(events(simd, &bytes), want, "{simd:?}, round {round}");
            }
        }
    }
}
