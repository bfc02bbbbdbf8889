//! `app plugin install`, `remove`, `upgrade`, `list` and `new`, run through
//! the real `app` binary in a sandbox, against files, a compiled binary, and
//! a local HTTP server.

use crate::common;

use std::fs;
use std::path::PathBuf;
use std::process::{Output, Stdio};

use common::{snapshot, Sandbox};
use sha2::{Digest, Sha256};

mod downloads;
mod local;
mod multi_file;
mod new;
mod newcomer;
mod refusals;

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A script plugin that answers `__app_metadata` with `version` and prints `greeting`.
fn script_plugin(version: &str, greeting: &str) -> String {
    format!(
        "#!/bin/sh\n\
         if [ \"${{1-}}\" = __app_metadata ]; then\n\
         echo '{{\"apiVersion\":\"app.plugin/v1\",\"version\":\"{version}\",\"description\":\"test plugin\"}}'\n\
         exit 0\n\
         fi\n\
         echo \"{greeting} $*\"\n"
    )
}

/// A `.tar.gz` with the given (path, mode, contents) members.
fn targz(files: &[(&str, u32, &[u8])]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (path, mode, body) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(body.len() as u64);
        header.set_mode(*mode);
        header.set_cksum();
        builder.append_data(&mut header, path, *body).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

struct T {
    sb: Sandbox,
}

impl T {
    fn new() -> T {
        let sb = Sandbox::new();
        fs::create_dir_all(sb.path().join("src")).unwrap();
        T { sb }
    }

    fn plugin_dir(&self) -> PathBuf {
        self.sb.data_dir().join("plugins")
    }

    fn src(&self, name: &str) -> PathBuf {
        self.sb.path().join("src").join(name)
    }

    fn app(&self, args: &[&str]) -> Output {
        let mut cmd = self.sb.app_without_proxy();
        cmd.args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run app")
    }

    fn index(&self) -> serde_json::Value {
        let text =
            fs::read_to_string(self.plugin_dir().join(".receipts.json")).expect("index exists");
        serde_json::from_str(&text).unwrap()
    }

    /// Runs `app args` expecting a refusal with `code` whose stderr contains
    /// `needle`, and checks the plugin dir did not change.
    fn refused(&self, args: &[&str], code: i32, needle: &str) {
        let before = snapshot(&self.plugin_dir());
        let out = self.app(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: expected {needle:?} in {stderr}"
        );
        assert!(stderr.starts_with("app: "), "{stderr}");
        assert_eq!(
            snapshot(&self.plugin_dir()),
            before,
            "{args:?} changed the plugin dir"
        );
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}
