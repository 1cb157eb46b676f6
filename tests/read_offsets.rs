//! Reads of a mirrored file at offsets near and past 2⁶³ (defect 5): no
//! file reaches past i64::MAX, so a read there is empty — never the i/o
//! error the kernel's refusal of an overflowing range would make of it.

mod common;

use std::sync::Arc;

use common::*;

const TEXT: &[u8] = b"a few bytes of notes\n";

/// The offsets that reach past i64::MAX with a count of 100, and the
/// largest there is.
const HUGE: [u64; 4] = [i64::MAX as u64, i64::MAX as u64 - 1, i64::MAX as u64 - 10, u64::MAX];

fn daemon() -> Daemon {
    let s: Arc<Scratch> = Scratch::new();
    s.home_file(".hermes/notes.txt", TEXT);
    let proc_dir = s.empty_proc();
    Daemon::start_in(&s, &["--proc", &proc_dir])
}

fn assert_huge_offsets_read_nothing(dialect: Dialect) {
    let d = daemon();
    let mut c = d.session(dialect);
    c.open_path("/hermes/notes.txt", 1);
    for offset in HUGE {
        let r = c.read(1, offset, 100);
        assert!(!r.is_error(), "a read at {offset:#x} answered {r:?}");
        assert!(r.data().is_empty(), "a read at {offset:#x} returned bytes");
    }
    assert_eq!(c.read_ok(1, 0, 100), TEXT, "and the file still reads from its start");
}

#[test]
fn reads_reaching_past_i64_max_of_a_mirrored_file_are_empty() {
    assert_huge_offsets_read_nothing(Dialect::P2000);
}

#[test]
fn reads_reaching_past_i64_max_are_empty_in_nine_p_2000_u_too() {
    assert_huge_offsets_read_nothing(Dialect::P2000u);
}
