//! `app_fetch`: downloads and unpacks plugins for `app plugin install`, so
//! that the `app` binary links no HTTP, TLS or archive code. What it and
//! `app` say to each other is the crate both use, [`app_fetch_protocol`];
//! the rest of an install (checks before, writing after) is `app`'s, in
//! `app::install`.
//!
//! Modules: [`acquire`] (step 2 of an install: read or download, verify,
//! unpack), [`http`] (the download), [`archive`] (`.tar.gz`); and
//! [`publish`], `app plugin index init|publish` (packing, signing).

mod acquire;
mod archive;
mod http;
mod publish;

use std::ffi::OsString;

use app_fetch_protocol::{self as protocol, code, HELPER};

fn main() {
    std::process::exit(serve(std::env::args_os().skip(1).collect()));
}

/// `app_fetch`'s whole job; returns its exit code.
fn serve(args: Vec<OsString>) -> i32 {
    if args.first().is_some_and(|a| a == protocol::publish::FLAG) {
        let request = args
            .get(1)
            .and_then(|a| a.to_str())
            .and_then(protocol::publish::parse);
        return match request {
            Some(request) => publish::run(&request),
            None => {
                eprintln!(
                    "usage: {HELPER} --publish JSON  (used by `app plugin index init|publish`)"
                );
                code::USAGE
            }
        };
    }
    let Some(fetch) = protocol::parse_args(&args) else {
        eprintln!(
            "usage: {HELPER} PATH|URL [--sha256 HEX] [--raw MAX] [--token-file FILE]  (used by `app plugin install`)"
        );
        return code::USAGE;
    };
    let result = acquire::acquire(&fetch);
    let exit = result.as_ref().map_or_else(|e| e.exit_code(), |_| 0);
    match protocol::write_answer(&mut std::io::stdout().lock(), &result) {
        Ok(()) => exit,
        Err(_) => code::FAILURE,
    }
}
