//! The Rust side and the comparison, against Java output recorded from
//! `conformance/java` (Kafka 4.3.1), so these run without a JVM.

use kacrab_conformance::compare::{compare, Verdict};
use kacrab_conformance::core_side;
use kacrab_conformance::generate::{self, Answers};
use kacrab_conformance::trace::Trace;

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

const TRIVIAL: &str = r#"{"op":"config","partitions":1,"nodes":1}
{"op":"send","p":0,"size":10}
{"op":"answer","node":0}
{"op":"end"}
"#;

const TRIVIAL_JAVA: &str = r#"{"ev":"init","pid":-1,"epoch":-1}
{"ev":"produce","node":0,"batches":"0:1000:0:0:1"}
{"ev":"answered","node":0,"batches":"0:1000:0:0:1=NONE"}
{"ev":"outcome","rec":0,"result":"ok:0"}"#;

#[test]
fn generated_traces_round_trip_through_json_lines() {
    for seed in 0..200 {
        let t = generate::idempotent(seed, Answers::Faulty);
        let back = Trace::parse_many(&t.to_jsonl()).unwrap();
        assert_eq!(back, vec![t], "seed {seed}");
    }
}

#[test]
fn the_core_writes_what_java_wrote_for_one_send_and_one_answer() {
    let trace = &Trace::parse_many(TRIVIAL).unwrap()[0];
    let (core, extra) = core_side::run(trace);
    assert_eq!(core, lines(TRIVIAL_JAVA));
    assert_eq!(
        compare(trace, &lines(TRIVIAL_JAVA), &core, &extra).verdict,
        Verdict::Same
    );
}

#[test]
fn a_difference_no_detector_explains_is_unexplained() {
    let trace = &Trace::parse_many(TRIVIAL).unwrap()[0];
    let (core, extra) = core_side::run(trace);
    // Java as if it had sent sequence 1 first: no departure explains that.
    let java = lines(&TRIVIAL_JAVA.replace("0:1000:0:0:1", "0:1000:0:1:1"));
    assert_eq!(
        compare(trace, &java, &core, &extra).verdict,
        Verdict::Unexplained
    );
}

#[test]
fn java_pipelining_before_the_first_ack_is_the_first_batch_gate() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../conformance/traces/first_batch_overtake.jsonl"
    ))
    .unwrap();
    let trace = &Trace::parse_many(&text).unwrap()[0];
    // Recorded from the Java side.
    let java = lines(
        r#"{"ev":"init","pid":-1,"epoch":-1}
{"ev":"produce","node":0,"batches":"0:1000:0:0:1"}
{"ev":"produce","node":0,"batches":"0:1000:0:1:1"}
{"ev":"answered","node":0,"batches":"0:1000:0:0:1=NOT_ENOUGH_REPLICAS"}
{"ev":"answered","node":0,"batches":"0:1000:0:1:1=NONE"}
{"ev":"produce","node":0,"batches":"0:1000:0:0:1"}
{"ev":"answered","node":0,"batches":"0:1000:0:0:1=OUT_OF_ORDER_SEQUENCE_NUMBER"}
{"ev":"produce","node":0,"batches":"0:1000:0:0:1"}
{"ev":"answered","node":0,"batches":"0:1000:0:0:1=NONE"}
{"ev":"outcome","rec":0,"result":"ok:1"}
{"ev":"outcome","rec":1,"result":"ok:0"}"#,
    );
    let (core, extra) = core_side::run(trace);
    // The core keeps send order in the log.
    assert!(core.contains(&r#"{"ev":"outcome","rec":0,"result":"ok:0"}"#.to_string()));
    assert!(core.contains(&r#"{"ev":"outcome","rec":1,"result":"ok:1"}"#.to_string()));
    assert_eq!(
        compare(trace, &java, &core, &extra).verdict,
        Verdict::FirstBatchGate
    );
}
