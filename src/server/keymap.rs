//! Tables keyed by numbers a client chooses or the daemon counts.

use std::collections::HashMap;

/// A table keyed by numbers a client chooses (fids, tags) or the daemon
/// counts (record keys), looked up several times a request: hashed with
/// wyhash under a seed drawn for each table, not std's SipHash (the
/// hashing was 1% of a `cat`'s instructions in the diod bench's guest,
/// bench/README "Where a `cat` goes"); the seed keeps a client from
/// choosing fids that all fall in one bucket.
pub(crate) type KeyMap<K, V> = HashMap<K, V, wyhash::v1::WyHasherBuilder>;

/// An empty `KeyMap` with a seed of its own.
pub(crate) fn key_map<K, V>() -> KeyMap<K, V> {
    use std::hash::BuildHasher;
    let seed = std::hash::RandomState::new().hash_one(0u64);
    HashMap::with_hasher(wyhash::v1::WyHasherBuilder::new(seed))
}
