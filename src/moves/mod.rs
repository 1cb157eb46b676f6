//! `moves`: what writing a name into `/active/<h>/<pid>/zmx` may do — the
//! pure half. The server runs the move (kill, spawn, wait for the post) as
//! a parked request; here are the rules it checks before anything is
//! destroyed, and the one command line it may run.
//!
//! This is the tree's only write path and an escalation: a client that may
//! write `zmx` can kill the user's agents and make a process start. So the
//! only byte a client supplies that reaches `exec` is the session name,
//! checked against zmx's label charset first; the rest of the command line
//! is fixed per harness and filled from what the daemon resolved itself.

use crate::errors::Error;
use crate::harness::Harness;

/// The longest zmx session name accepted.
pub(crate) const NAME_BYTES_MAX: usize = 64;

/// The name a write asks for: one line (a trailing newline is allowed) of
/// 1 to `NAME_BYTES_MAX` bytes of `[A-Za-z0-9._-]`, not all dots (so it is
/// a plain file name in the zmx registry).
pub(crate) fn parse_name(data: &[u8]) -> Result<&[u8], Error> {
    let name = data.strip_suffix(b"\n").unwrap_or(data);
    let charset = name.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if name.is_empty() || name.len() > NAME_BYTES_MAX || !charset || name.iter().all(|&b| b == b'.') {
        return Err(Error::IllegalName);
    }
    Ok(name)
}

/// The harness's command to resume a session, or why there is none:
/// `claude --resume <sid>`, `omp --resume <transcript>`,
/// `codex resume <sid>`, `hermes --resume <sid>`; dsh has no resume form.
pub(crate) fn resume_argv(
    harness: Harness,
    session_id: &[u8],
    transcript: Option<&[u8]>,
) -> Result<Vec<Vec<u8>>, Error> {
    let argv: Vec<&[u8]> = match harness {
        Harness::Dsh => return Err(Error::NoResumeForm),
        _ if session_id.is_empty() => return Err(Error::NothingToResume),
        Harness::Claude => vec![b"claude", b"--resume", session_id],
        Harness::Codex => vec![b"codex", b"resume", session_id],
        Harness::Hermes => vec![b"hermes", b"--resume", session_id],
        Harness::Omp => vec![b"omp", b"--resume", transcript.ok_or(Error::NothingToResume)?],
        Harness::Pi => vec![b"pi", b"--session", transcript.ok_or(Error::NothingToResume)?],
    };
    Ok(argv.into_iter().map(<[u8]>::to_vec).collect())
}

/// The whole command line: `zmx run <name> -d` and the resume command.
pub(crate) fn zmx_argv(name: &[u8], resume: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut argv = vec![b"run".to_vec(), name.to_vec(), b"-d".to_vec()];
    argv.extend(resume);
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_may_end_in_one_newline_and_nothing_else() {
        assert_eq!(parse_name(b"mine\n"), Ok(&b"mine"[..]));
        assert_eq!(parse_name(b"a.b_c-9"), Ok(&b"a.b_c-9"[..]));
        for bad in [&b""[..], b"\n", b"mine\n\n", b"a b", b"a/b", b"..", b".", b"x\0", b"caf\xc3\xa9", b"$(rm)"] {
            assert_eq!(parse_name(bad), Err(Error::IllegalName), "{bad:?}");
        }
        assert!(parse_name(&[b'a'; 64]).is_ok());
        assert_eq!(parse_name(&[b'a'; 65]), Err(Error::IllegalName));
    }

    #[test]
    fn each_harness_resumes_with_its_fixed_argv() {
        let v = |a: &[&str]| a.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(resume_argv(Harness::Claude, b"s1", None), Ok(v(&["claude", "--resume", "s1"])));
        assert_eq!(resume_argv(Harness::Codex, b"s2", None), Ok(v(&["codex", "resume", "s2"])));
        assert_eq!(resume_argv(Harness::Hermes, b"s3", None), Ok(v(&["hermes", "--resume", "s3"])));
        assert_eq!(
            resume_argv(Harness::Omp, b"s4", Some(b"/h/.omp/t.jsonl")),
            Ok(v(&["omp", "--resume", "/h/.omp/t.jsonl"]))
        );
    }

    #[test]
    fn dsh_has_no_resume_form_and_an_empty_session_is_nothing_to_resume() {
        assert_eq!(resume_argv(Harness::Dsh, b"s", None), Err(Error::NoResumeForm));
        assert_eq!(resume_argv(Harness::Hermes, b"", None), Err(Error::NothingToResume));
        assert_eq!(resume_argv(Harness::Omp, b"s", None), Err(Error::NothingToResume));
    }

    #[test]
    fn the_zmx_command_line_is_run_name_detached_then_the_resume() {
        let argv = zmx_argv(b"mine", vec![b"claude".to_vec(), b"--resume".to_vec(), b"s".to_vec()]);
        assert_eq!(
            argv,
            vec![
                b"run".to_vec(),
                b"mine".to_vec(),
                b"-d".to_vec(),
                b"claude".to_vec(),
                b"--resume".to_vec(),
                b"s".to_vec()
            ]
        );
    }
}
