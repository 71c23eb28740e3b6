//! `api_listing`: the public API of a crate as sorted text, and the semver check.
//!
//! ```text
//! api_listing list DOC.json              # the listing, to stdout
//! api_listing check BASELINE.txt DOC.json  # additions printed; exit 1 on a removed or changed item
//! ```
//! `DOC.json` is rustdoc's JSON output for the crate; `scripts/api_check.sh` makes it
//! and keeps the baselines in `api/`. See [`kacrab_conformance::api_listing`].

use std::process::ExitCode;

use kacrab_conformance::api_listing::{compare, listing};

fn read_listing(doc: &str) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(doc).map_err(|e| format!("{doc}: {e}"))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{doc}: {e}"))?;
    listing(&value).map_err(|e| format!("{doc}: {e}"))
}

fn run(args: &[String]) -> Result<ExitCode, String> {
    match args {
        [cmd, doc] if cmd == "list" => {
            for line in read_listing(doc)? {
                println!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
        [cmd, baseline, doc] if cmd == "check" => {
            let old: Vec<String> = std::fs::read_to_string(baseline)
                .map_err(|e| format!("{baseline}: {e}"))?
                .lines()
                .map(str::to_owned)
                .collect();
            let comparison = compare(&old, &read_listing(doc)?);
            print!("{}", comparison.report());
            Ok(if comparison.is_breaking() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        _ => {
            Err("usage: api_listing list DOC.json | api_listing check BASELINE.txt DOC.json".into())
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    run(&args).unwrap_or_else(|e| {
        eprintln!("api_listing: {e}");
        ExitCode::from(2)
    })
}
