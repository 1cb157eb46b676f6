//! The client's entry: a subcommand parsed (`cli`), then run on the one
//! host it names (`cli::on_host`), on several (`multi`), or live (`top`).

use std::ffi::OsString;
use std::io;

use super::cli::{on_host, parse, Command, Failure, Invocation, USAGE};

/// Run the subcommand `args[0]` with its arguments; the process exit status.
pub fn run(args: Vec<OsString>) -> i32 {
    if args.first().is_some_and(|a| a == "search") && args.iter().any(|a| a == "--help" || a == "-h") {
        println!("usage: 9agents search [-a ADDR] WORD...\n\n{}", crate::search::query::HELP);
        return 0;
    }
    let invocation = match parse(args) {
        Ok(invocation) => invocation,
        Err(why) => {
            eprintln!("9agents: {why}\n{USAGE}");
            return 2;
        }
    };
    match execute(&invocation) {
        Ok(()) | Err(Failure::ReaderGone) => 0,
        Err(Failure::Reported) => 1,
        Err(Failure::At(subject, e)) => {
            eprintln!("9agents: {subject}: {e}");
            1
        }
    }
}

fn execute(invocation: &Invocation) -> Result<(), Failure> {
    let hosts = super::hosts::resolve(&invocation.addrs).map_err(|e| Failure::At("hosts".into(), e))?;
    if invocation.command == Command::Top {
        return super::top::run(&hosts);
    }
    if let [(_, addr)] = &hosts[..] {
        return on_host(invocation, addr, &mut io::stdout().lock());
    }
    super::multi::run(invocation, &hosts)
}
