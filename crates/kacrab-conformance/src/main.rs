//! `kacrab-conformance`: generate traces, run them through Java and the core, compare.
//!
//! ```text
//! kacrab-conformance check [--seed S] [--traces N] [--batch B] [--clean|--mixed] [--txn] [--shrink] [--save FILE] [--strict] [--find CLASS]
//! kacrab-conformance replay FILE      # a trace file through both sides, outputs side by side
//! kacrab-conformance core FILE        # a trace file through the core only
//! kacrab-conformance shrink FILE [--find CLASS]  # each trace shrunk, keeping its verdict
//! ```
//! The Java classpath comes from `KACRAB_CONFORMANCE_CP`, or `conformance/java/build.sh`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use kacrab_conformance::compare::{compare, Verdict};
use kacrab_conformance::generate::{self, Answers};
use kacrab_conformance::trace::Trace;
use kacrab_conformance::{core_side, java, shrink};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn classpath() -> Result<String, String> {
    match std::env::var("KACRAB_CONFORMANCE_CP") {
        Ok(cp) if !cp.is_empty() => Ok(cp),
        _ => java::build(&repo_root()),
    }
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("check") => check(&args),
        Some("replay") => replay(&args, true),
        Some("core") => replay(&args, false),
        Some("shrink") => shrink_file(&args),
        _ => Err("usage: kacrab-conformance check|replay FILE|core FILE".to_string()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("kacrab-conformance: {e}");
            ExitCode::from(2)
        }
    }
}

fn replay(args: &[String], with_java: bool) -> Result<bool, String> {
    let path = args.get(1).ok_or("replay needs a trace file")?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let traces = Trace::parse_many(&text)?;
    let java_out = if with_java {
        java::run(&classpath()?, &traces)?
    } else {
        vec![Vec::new(); traces.len()]
    };
    let mut all_same = true;
    for (t, j) in traces.iter().zip(java_out) {
        let (c, extra) = core_side::run(t);
        let cmp = compare(t, &j, &c, &extra);
        all_same &= cmp.verdict == Verdict::Same || !with_java;
        println!("== verdict: {:?} {:?}", cmp.verdict, cmp.partitions);
        // Java's reports of where its drain stopped are listed apart, once each, so the
        // two outputs stay aligned.
        let (stops, j): (Vec<String>, Vec<String>) = j
            .into_iter()
            .partition(|l| l.contains(r#""ev":"drain_stop""#));
        let mut stops = stops;
        stops.dedup();
        for s in &stops {
            println!("~ java {s}");
        }
        for i in 0..j.len().max(c.len()) {
            let jl = j.get(i).map_or("", String::as_str);
            let cl = c.get(i).map_or("", String::as_str);
            let mark = if jl == cl { ' ' } else { '!' };
            if with_java {
                println!("{mark} java {jl}\n{mark} core {cl}");
            } else {
                println!("core {cl}");
            }
        }
    }
    Ok(all_same)
}

/// Shrinks every trace of a file that has the wanted verdict (`--find CLASS`, default
/// `Unexplained`) and prints the shrunk traces.
fn shrink_file(args: &[String]) -> Result<bool, String> {
    let path = args.get(1).ok_or("shrink needs a trace file")?;
    let wanted = args
        .iter()
        .position(|a| a == "--find")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "Unexplained".to_string());
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let traces = Trace::parse_many(&text)?;
    let cp = classpath()?;
    let mut verdict_of = |ts: &[Trace]| -> Vec<bool> {
        match java::run(&cp, ts) {
            Ok(outs) => ts
                .iter()
                .zip(outs)
                .map(|(t, j)| {
                    let (c, extra) = core_side::run(t);
                    format!("{:?}", compare(t, &j, &c, &extra).verdict) == wanted
                })
                .collect(),
            Err(_) => vec![false; ts.len()],
        }
    };
    let keep = verdict_of(&traces);
    for (t, k) in traces.iter().zip(keep) {
        if k {
            print!("{}", shrink::shrink(t, &mut verdict_of).to_jsonl());
        }
    }
    Ok(true)
}

fn check(args: &[String]) -> Result<bool, String> {
    let seed: u64 = arg(args, "--seed", 1);
    let count: u64 = arg(args, "--traces", 1000);
    let batch: u64 = arg(args, "--batch", 2000);
    // `--clean`: only NONE answers; `--mixed`: every fourth trace clean, the rest faulty
    // (one run covers both, for CI); default: faulty.
    let mixed = args.iter().any(|a| a == "--mixed");
    let answers_of = |i: u64| {
        if args.iter().any(|a| a == "--clean") || (mixed && i % 4 == 3) {
            Answers::Clean
        } else {
            Answers::Faulty
        }
    };
    // `--txn`: transactional traces (transaction version 1) instead, with `--mixed`
    // every fourth clean. Not mixed into the idempotent run: its unexplained share is
    // not zero yet (docs/design.md, "Transactional traces").
    let only_txn = args.iter().any(|a| a == "--txn");
    let txn_of = |_: u64| only_txn;
    let want_shrink = args.iter().any(|a| a == "--shrink");
    // `--find CLASS`: collect and shrink traces of that verdict instead (minimal traces
    // for the documentation).
    let wanted = args
        .iter()
        .position(|a| a == "--find")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "Unexplained".to_string());
    let save_to = args
        .iter()
        .position(|a| a == "--save")
        .and_then(|i| args.get(i + 1));
    let cp = classpath()?;
    let started = Instant::now();
    let mut by_verdict: BTreeMap<Verdict, u64> = BTreeMap::new();
    let mut requests = 0u64;
    let mut unexplained: Vec<Trace> = Vec::new();
    let mut done = 0u64;
    while done < count {
        let n = batch.min(count - done);
        let traces: Vec<Trace> = (done..done + n)
            .map(|i| {
                let trace_seed = seed.wrapping_mul(1_000_003).wrapping_add(i);
                if txn_of(i) {
                    generate::transactional(trace_seed, answers_of(i))
                } else {
                    generate::idempotent(trace_seed, answers_of(i))
                }
            })
            .collect();
        let java_out = java::run(&cp, &traces)?;
        for (t, j) in traces.iter().zip(&java_out) {
            let (c, extra) = core_side::run(t);
            requests += j
                .iter()
                .filter(|l| l.contains(r#""ev":"produce""#) || l.contains(r#""ev":"txn""#))
                .count() as u64;
            let cmp = compare(t, j, &c, &extra);
            *by_verdict.entry(cmp.verdict).or_default() += 1;
            // With `--save`, every trace of the wanted class is kept (a long run's
            // unexplained traces, to replay with later detectors); else the first 20.
            let keep = if save_to.is_some() { 100_000 } else { 20 };
            if format!("{:?}", cmp.verdict) == wanted && unexplained.len() < keep {
                unexplained.push(t.clone());
            }
        }
        done += n;
    }
    println!(
        "conformance: {count} traces (seed {seed}), {requests} Java requests compared (Produce and transactional), {:.1}s",
        started.elapsed().as_secs_f64()
    );
    for (v, n) in &by_verdict {
        println!("  {v:?}: {n}");
    }
    if let Some(path) = save_to {
        let all: String = unexplained.iter().map(Trace::to_jsonl).collect();
        std::fs::write(path, all).map_err(|e| format!("{path}: {e}"))?;
    }
    if let Some(first) = unexplained.first() {
        let minimal = if want_shrink {
            let verdict_of = |ts: &[Trace]| -> Vec<bool> {
                match java::run(&cp, ts) {
                    Ok(outs) => ts
                        .iter()
                        .zip(outs)
                        .map(|(t, j)| {
                            let (c, extra) = core_side::run(t);
                            format!("{:?}", compare(t, &j, &c, &extra).verdict) == wanted
                        })
                        .collect(),
                    Err(_) => vec![false; ts.len()],
                }
            };
            let mut f = verdict_of;
            shrink::shrink(first, &mut f)
        } else {
            first.clone()
        };
        println!(
            "first {wanted} trace (shrunk: {want_shrink}):\n{}",
            minimal.to_jsonl()
        );
    }
    let unexplained_count = by_verdict.get(&Verdict::Unexplained).copied().unwrap_or(0);
    if args.iter().any(|a| a == "--strict") {
        println!(
            "{} passed, {} failed",
            count - unexplained_count,
            unexplained_count
        );
        Ok(unexplained_count == 0)
    } else {
        println!("unexplained divergences: {unexplained_count} of {count} traces (not --strict: reported, not failed)");
        Ok(true)
    }
}
