//! What the offline conformance tests share: recorded traces and their verdicts.

#![allow(dead_code)] // each test file uses its own part

use kacrab_conformance::compare::{compare, Verdict};
use kacrab_conformance::core_side;
use kacrab_conformance::trace::Trace;

/// The lines of a text.
pub fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

/// A shrunk trace of `conformance/traces` and the Java side's output for it, recorded
/// with `conformance/java` (Kafka 4.3.1).
pub fn recorded(name: &str) -> (Trace, Vec<String>) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../conformance/traces/");
    let text = std::fs::read_to_string(format!("{dir}{name}.jsonl")).unwrap();
    let java = std::fs::read_to_string(format!("{dir}{name}.java.jsonl")).unwrap();
    (Trace::parse_many(&text).unwrap().remove(0), lines(&java))
}

/// The verdict of comparing `java` with the core's output for `trace`.
pub fn verdict(trace: &Trace, java: &[String]) -> Verdict {
    let (core, extra) = core_side::run(trace);
    compare(trace, java, &core, &extra).verdict
}

/// Java's output without its reports of where its drain stopped.
pub fn without_drain_stops(java: &[String]) -> Vec<String> {
    java.iter()
        .filter(|l| !l.contains(r#""ev":"drain_stop""#))
        .cloned()
        .collect()
}

/// Java's output with `from` replaced by `to` on every line.
pub fn replaced(java: &[String], from: &str, to: &str) -> Vec<String> {
    java.iter().map(|l| l.replace(from, to)).collect()
}

/// Asserts that the recorded trace `name` is `class`, and that `variant` of Java's
/// output (a change the class's detector must not accept) stays unexplained.
pub fn recorded_as(name: &str, class: Verdict, variant: fn(&[String]) -> Vec<String>) {
    let (trace, java) = recorded(name);
    assert_eq!(verdict(&trace, &java), class, "{name}");
    assert_eq!(
        verdict(&trace, &variant(&java)),
        Verdict::Unexplained,
        "{name}: variant"
    );
}

/// [`recorded_as`] whose near miss is Java's output with `from` replaced by `to`.
pub fn recorded_as_replaced(name: &str, class: Verdict, from: &str, to: &str) {
    let (trace, java) = recorded(name);
    assert!(
        java.iter().any(|l| l.contains(from)),
        "{name}: the near miss changes nothing"
    );
    assert_eq!(verdict(&trace, &java), class, "{name}");
    assert_eq!(
        verdict(&trace, &replaced(&java, from, to)),
        Verdict::Unexplained,
        "{name}: variant"
    );
}
