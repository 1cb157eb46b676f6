//! The exclusions: the names the daemon never serves, at any depth, in any
//! root, by walk or by listing. This is the security boundary — the daemon
//! must never become a credential reader for whoever mounts it — so the rule
//! is one predicate, applied to every component before it reaches the
//! kernel, and it errs towards hiding: "auth" also hides `author-notes`.
//!
//! Every comparison ignores ASCII case. The seed asks that only of the
//! substrings; hiding `SETTINGS.JSON` and `Server.PEM` too costs nothing a
//! user wants and closes the gap a case-insensitive filesystem would open.

/// Substrings that hide a name wherever they appear in it.
const SUBSTRINGS: [&[u8]; 4] = [b"credentials", b"token", b"auth", b"secret"];
/// Endings that hide a name.
const SUFFIXES: [&[u8]; 3] = [b".key", b".pem", b".env"];
/// Whole names that hide: the harnesses' configuration files, which may
/// carry API keys, and the ssh directory.
const NAMES: [&[u8]; 9] = [
    b"settings.json",
    b"settings.yaml",
    b"settings.local.json",
    b"config.yml",
    b"config.yaml",
    b"config.toml",
    b"models.yml",
    b"models.yaml",
    b".ssh",
];
/// Beginnings that hide: private keys.
const PREFIXES: [&[u8]; 4] = [b"id_rsa", b"id_dsa", b"id_ecdsa", b"id_ed25519"];

/// The longest name this module compares without allocating; longer
/// names (up to NAME_MAX) are lowered into a heap buffer.
const LOWER_INLINE_BYTES: usize = 256;

/// The substrings' searchers, built once: building one per call cost more
/// than the search (every name of a 10,000-session listing passes here).
fn finders() -> &'static [memchr::memmem::Finder<'static>; 4] {
    static FINDERS: std::sync::OnceLock<[memchr::memmem::Finder<'static>; 4]> = std::sync::OnceLock::new();
    FINDERS.get_or_init(|| SUBSTRINGS.map(memchr::memmem::Finder::new))
}

/// Is `name` (one path component) never to be served?
pub(crate) fn excluded(name: &[u8]) -> bool {
    let mut inline = [0u8; LOWER_INLINE_BYTES];
    let heap;
    let lower: &[u8] = if name.len() <= LOWER_INLINE_BYTES {
        for (d, s) in inline.iter_mut().zip(name) {
            *d = s.to_ascii_lowercase();
        }
        &inline[..name.len()]
    } else {
        heap = name.to_ascii_lowercase();
        &heap
    };
    finders().iter().any(|f| f.find(lower).is_some())
        || SUFFIXES.iter().any(|s| lower.ends_with(s))
        || NAMES.contains(&lower)
        || PREFIXES.iter().any(|p| lower.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::excluded;

    #[test]
    fn credential_substrings_hide_in_any_case_and_position() {
        for name in [
            ".credentials.json",
            "credentials",
            "auth.json",
            "AUTH",
            "oauth-cache",
            "author-notes",
            "my-token.txt",
            "TOKEN",
            "SECRET-plan.md",
            "client_secret",
        ] {
            assert!(excluded(name.as_bytes()), "{name} must be hidden");
        }
    }

    #[test]
    fn key_pem_and_env_endings_hide_but_env_alone_does_not() {
        for name in ["api.key", "server.pem", ".env", "notes.env", "PROD.ENV"] {
            assert!(excluded(name.as_bytes()), "{name} must be hidden");
        }
        for name in ["env", "environment", "keys", "pem", "key.txt", "env.d"] {
            assert!(!excluded(name.as_bytes()), "{name} must be shown");
        }
    }

    #[test]
    fn config_files_hide_exactly_and_their_cousins_show() {
        for name in [
            "settings.json",
            "settings.yaml",
            "settings.local.json",
            "config.yml",
            "config.yaml",
            "config.toml",
            "models.yml",
            "models.yaml",
            ".ssh",
            "Settings.JSON",
        ] {
            assert!(excluded(name.as_bytes()), "{name} must be hidden");
        }
        for name in ["settings", "config", "config.json", "models.db", "ssh", "settings.json.bak"] {
            assert!(!excluded(name.as_bytes()), "{name} must be shown");
        }
    }

    #[test]
    fn private_key_prefixes_hide() {
        for name in ["id_rsa", "id_rsa.pub", "id_dsa", "id_ecdsa_sk", "id_ed25519", "ID_ED25519"] {
            assert!(excluded(name.as_bytes()), "{name} must be hidden");
        }
        assert!(!excluded(b"my_id_rsa_notes"));
        assert!(!excluded(b"id_card"));
    }

    #[test]
    fn ordinary_transcript_names_show() {
        for name in ["projects", "history.jsonl", "rollout-2026-11-28T10-00-00-x.jsonl", "memory", "SKILL.md"] {
            assert!(!excluded(name.as_bytes()), "{name} must be shown");
        }
    }

    #[test]
    fn names_longer_than_the_inline_buffer_are_still_checked() {
        let mut long = vec![b'a'; 300];
        long.extend_from_slice(b"TOKEN");
        assert!(excluded(&long));
        assert!(!excluded(&[b'a'; 300]));
    }
}
