//! The registration: `--source-kind`'s values, help, guess and refusals
//! all come from [`KINDS`]; and the design doc quotes the code.

use super::*;
use std::path::Path;

fn chosen(args: &[&str]) -> Result<&'static str, String> {
    kind(&crate::sink::run_args(args).source.common).map(|k| k.name)
}

fn configured(args: &[&str]) -> Result<(&'static str, String), String> {
    let run = crate::sink::run_args(args);
    let setup = Setup {
        source: &run.source.source,
        plugin_dir: Path::new("/p"),
    };
    configure(&run.source, &setup).map(|(name, c)| (name, c.to_string()))
}

#[test]
fn the_kind_follows_the_url_unless_told() {
    assert_eq!(
        chosen(&["--source", "https://stream.example/v2/stream/x"]),
        Ok("sse")
    );
    assert_eq!(
        chosen(&[
            "--source",
            "http://127.0.0.1:8080/.well-known/mercure?topic=a"
        ]),
        Ok("sse")
    );
    assert_eq!(chosen(&["--source", "http://127.0.0.1:8080"]), Ok("plugin"));
    assert_eq!(
        chosen(&["--source", "http://127.0.0.1:8080/"]),
        Ok("plugin")
    );
    assert_eq!(chosen(&[]), Ok("plugin"));
    let told = ["--source", "http://127.0.0.1:8080", "--source-kind", "sse"];
    assert_eq!(chosen(&told), Ok("sse"));
    let told = ["--source", "http://h/x", "--source-kind", "plugin"];
    assert_eq!(chosen(&told), Ok("plugin"));
}

#[test]
fn every_registered_kind_is_a_source_kind_value_of_its_name() {
    use clap::{CommandFactory, Parser};
    let cmd = crate::cli::Cli::command();
    let run = cmd.find_subcommand("run").unwrap();
    let arg = run
        .get_arguments()
        .find(|a| a.get_long() == Some("source-kind"))
        .unwrap();
    let values: Vec<(String, String)> = arg
        .get_possible_values()
        .iter()
        .map(|v| {
            let help = v.get_help().map(|h| h.to_string()).unwrap_or_default();
            (v.get_name().to_string(), help)
        })
        .collect();
    let kinds: Vec<(String, String)> = KINDS
        .iter()
        .map(|k| (k.name.to_string(), k.about.to_string()))
        .collect();
    assert_eq!(values, kinds);
    // The help names each kind and the texts each claims.
    let help = arg.get_help().unwrap().to_string();
    assert_eq!(
        help,
        "What --source is: plugin (event-time's dialect) or sse (any feed, the URL as given); default: sse for https:// and for http:// URLs with a path or query"
    );
    for kind in KINDS {
        let (name, _) =
            configured(&["--source", "http://h:1", "--source-kind", kind.name]).unwrap();
        assert_eq!(name, kind.name);
    }
    let pigeon = crate::cli::Cli::try_parse_from(["x", "run", "--source-kind", "pigeon"]);
    let e = pigeon.unwrap_err().to_string();
    assert!(e.contains("[possible values: plugin, sse]"), "{e}");
}

#[test]
fn a_flag_of_another_kind_is_refused_naming_its_kind() {
    for (flag, value) in [
        ("--source-header", "A: b"),
        ("--source-token-file", "/t"),
        ("--source-ca-file", "/ca"),
    ] {
        let e = configured(&[flag, value]).unwrap_err();
        assert_eq!(
            e,
            format!("{flag} is for a plain SSE feed (an http(s):// URL with a path, or --source-kind sse), not an event plugin")
        );
    }
    // The first given is the one named, in the kind's own order.
    let e = configured(&["--source-ca-file", "/ca", "--source-header", "A: b"]).unwrap_err();
    assert!(e.starts_with("--source-header is for"), "{e}");
    // With its own kind, taken; with none given, the plugin takes its text.
    let feed = ["--source", "http://h/x", "--source-header", "A: b"];
    assert_eq!(configured(&feed), Ok(("sse", "http://h/x".to_string())));
    assert_eq!(
        configured(&[]),
        Ok(("plugin", "unix:/p/event-time.sock".to_string()))
    );
}

#[test]
fn the_design_doc_quotes_the_plugin_source() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("../../docs/repeater-design.md")).unwrap();
    let code = [
        std::fs::read_to_string(root.join("src/source/plugin/mod.rs")).unwrap(),
        std::fs::read_to_string(root.join("src/source/mod.rs")).unwrap(),
    ];
    let blocks = crate::doc_quotes::rust_blocks(&doc, "### Adding a source");
    assert_eq!(blocks.len(), 4, "{blocks:#?}");
    for block in &blocks {
        assert!(
            code.iter().any(|c| c.contains(block.as_str())),
            "docs/repeater-design.md quotes code that is not in src/source/plugin/mod.rs or src/source/mod.rs:\n{block}"
        );
    }
    // And it would see a quote that no longer matches.
    let edited = blocks[0].replace("Plugin", "Socket");
    assert!(!code.iter().any(|c| c.contains(edited.as_str())));
}
