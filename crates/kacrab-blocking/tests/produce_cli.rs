//! The command line both `produce` examples share: flags, properties and the summary line.

#[path = "../../../examples/support/produce_cli.rs"]
mod cli;

use std::time::Duration;

use cli::Args;

fn parse(line: &str) -> Result<Args, String> {
    Args::parse(line.split_whitespace().map(str::to_owned))
}

#[test]
fn every_flag_parses_and_properties_keep_their_order() {
    let a = parse(
        "--bootstrap h:1 --topic t --partitions 6 --records 100 --record-size 10 \
         --linger-ms 5 --batch-size 1000 --threads 2 \
         --property acks=1 --property linger.ms=7",
    )
    .unwrap();
    assert_eq!(
        (
            a.bootstrap.as_str(),
            a.topic.as_str(),
            a.partitions,
            a.records,
            a.record_size
        ),
        ("h:1", "t", 6, 100, 10)
    );
    assert_eq!(a.threads, 2);
    assert_eq!(
        a.producer_properties("c"),
        vec![
            ("bootstrap.servers", "h:1"),
            ("client.id", "c"),
            ("linger.ms", "5"),
            ("batch.size", "1000"),
            ("acks", "1"),
            ("linger.ms", "7"),
        ]
    );
    // `--size` is the older name of `--record-size`; defaults apply without the flags.
    let b = parse("--bootstrap h:1 --topic t --partitions 1 --records 1 --size 3").unwrap();
    assert_eq!((b.record_size, b.threads), (3, 1));
    assert!(b.properties.is_empty());
}

#[test]
fn bad_command_lines_are_refused() {
    let base = "--bootstrap h:1 --topic t --partitions 2 --records 1 --record-size 1";
    assert!(parse(base).is_ok());
    for bad in [
        "--topic t --partitions 2 --records 1 --record-size 1",
        &format!("{base} --property nokey"),
        &format!("{base} --property =v"),
        &format!("{base} --records"),
        &format!("{base} --unknown 1"),
        &format!("{base} --threads 0"),
        // Gone: the producers bound their memory with buffer.memory.
        &format!("{base} --max-outstanding 64"),
        "--bootstrap h:1 --topic t --partitions 0 --records 1 --record-size 1",
        "--bootstrap h:1 --topic t --partitions x --records 1 --record-size 1",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
    assert_eq!(parse("--help"), Err(String::new()));
}

#[test]
fn records_are_checkable_and_the_summary_line_is_fixed() {
    let a = parse("--bootstrap h:1 --topic t --partitions 4 --records 10 --record-size 6").unwrap();
    assert_eq!(a.partition(9), 1);
    assert_eq!(Args::key(9), "9");
    assert_eq!(a.value(12), b"12....");
    assert_eq!(
        parse("--bootstrap h:1 --topic t --partitions 4 --records 1 --record-size 1")
            .unwrap()
            .value(123),
        b"123"
    );
    let mut latencies = vec![3000, 1000, 2000, 4000];
    assert_eq!(
        cli::summary(4, 4, 0, Duration::from_millis(2000), &mut latencies),
        "produce: records=4 acked=4 failed=0 elapsed_ms=2000 records_per_s=2 p50_ms=2.0 p99_ms=4.0"
    );
    assert_eq!(
        cli::summary(1, 0, 1, Duration::from_millis(10), &mut []),
        "produce: records=1 acked=0 failed=1 elapsed_ms=10 records_per_s=100 p50_ms=0.0 p99_ms=0.0"
    );
}

#[test]
fn stats_is_a_flag_without_a_value() {
    let base = "--bootstrap h:1 --topic t --partitions 2 --records 1 --record-size 1";
    assert!(!parse(base).unwrap().stats);
    let a = parse(&format!("--stats {base}")).unwrap();
    assert!(a.stats);
    assert_eq!(a.records, 1, "the flag takes no value");
}

#[test]
fn a_progress_line_has_the_rate_now_and_overall() {
    let first = cli::progress(Duration::from_secs(1), 100, 50, 0, None);
    assert_eq!(
        first,
        "produce: 1s acked=50/100 failed=0 (50 records/s now, 50 records/s overall)"
    );
    let later = cli::progress(
        Duration::from_secs(2),
        100,
        60,
        1,
        Some((Duration::from_secs(1), 50)),
    );
    assert_eq!(
        later,
        "produce: 2s acked=60/100 failed=1 (10 records/s now, 30 records/s overall)"
    );
}

#[test]
fn a_java_properties_file_reads_as_kafka_keys_in_order() {
    let text = "# a client.properties as Java clients take it\n\
                ! also a comment\n\
                \n\
                security.protocol = SASL_SSL\n\
                sasl.mechanism:PLAIN\n\
                sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule \\\n\
                \x20   required username=\"u\" password=\"p=q\";\n\
                ssl.endpoint.identification.algorithm=\n";
    assert_eq!(
        cli::parse_properties(text).unwrap(),
        vec![
            ("security.protocol".to_owned(), "SASL_SSL".to_owned()),
            ("sasl.mechanism".to_owned(), "PLAIN".to_owned()),
            (
                "sasl.jaas.config".to_owned(),
                "org.apache.kafka.common.security.plain.PlainLoginModule required \
                 username=\"u\" password=\"p=q\";"
                    .to_owned()
            ),
            (
                "ssl.endpoint.identification.algorithm".to_owned(),
                String::new()
            ),
        ]
    );
    assert!(cli::parse_properties("no separator here").is_err());
    assert!(cli::parse_properties("=value").is_err());
}

#[test]
fn config_file_properties_sit_where_the_flag_is() {
    let path = std::env::temp_dir().join(format!("kacrab-cli-{}.properties", std::process::id()));
    std::fs::write(&path, "acks=1\nlinger.ms=9\n").unwrap();
    let a = parse(&format!(
        "--bootstrap h:1 --topic t --partitions 1 --records 1 --record-size 1 \
         --linger-ms 5 --config {} --property acks=all",
        path.display()
    ))
    .unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        a.producer_properties("c")[2..],
        [
            ("linger.ms", "5"),
            ("acks", "1"),
            ("linger.ms", "9"),
            ("acks", "all")
        ]
    );
    let missing = parse("--bootstrap h:1 --topic t --partitions 1 --records 1 --record-size 1 --config /nonexistent/x.properties");
    assert!(missing.unwrap_err().contains("/nonexistent/x.properties"));
}
