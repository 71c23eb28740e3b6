//! The checker's reading of a leader log's journal: a truncated record that was never
//! acknowledged may be written again, an acknowledged one must never be truncated
//! (`Checker::scan_logs`), and an acknowledgement of a record no log holds is a loss.

// The model crate's rule tests share their v2 batch encoder with these.

use crate::common::{encode, TBatch, TRecord};
use kacrab_idempotence::{Event, RecordId, TopicPartition};
use kacrab_sim::broker::PartitionState;
use kacrab_sim::oracle::encode_value;
use kacrab_sim::{Checker, ViolationKind};

/// Record #0 of partition 0, from producer 7 at epoch 0, sequence 0.
fn append_record_0(p: &mut PartitionState) {
    let batch = TBatch {
        pid: 7,
        epoch: 0,
        base_seq: 0,
        attributes: 0,
        last_offset_delta: None,
        records: vec![TRecord {
            value: Some(encode_value(0, 0, 16).to_vec()),
            ..TRecord::default()
        }],
        timestamp: 0,
    };
    p.append(&encode(&batch), 0)
        .expect("the first batch of a producer is appended");
}

/// A partition whose leader log holds record #0 of partition 0.
fn logged_once() -> PartitionState {
    let mut p = PartitionState::new();
    append_record_0(&mut p);
    p
}

/// A leader change to an empty in-sync replica: the whole log is truncated.
fn truncate_all(p: &mut PartitionState) {
    let mut new_leader = PartitionState::new();
    let truncated = new_leader.take_over_from(p);
    assert_eq!(truncated.len(), 1);
    *p = new_leader;
}

fn delivered(tp: &TopicPartition) -> Event {
    Event::Delivered {
        partition: tp.clone(),
        records: vec![RecordId(0)],
        base_offset: Some(0),
        log_append_time: None,
    }
}

#[test]
fn a_truncated_unacknowledged_record_may_be_written_again() {
    let tp = TopicPartition::new("t", 0);
    let mut c = Checker::new(vec![tp.clone()]);
    c.on_sent(RecordId(0), 0, 0);
    let mut p = logged_once();
    c.scan_logs([&p]);
    truncate_all(&mut p);
    c.scan_logs([&p]);
    assert_eq!(c.truncated_records(), 1);
    append_record_0(&mut p);
    c.scan_logs([&p]);
    c.on_event(&delivered(&tp));
    assert_eq!(c.violations(), &[], "no duplicate, nothing lost");
}

#[test]
fn an_acknowledged_record_truncated_is_lost() {
    let tp = TopicPartition::new("t", 0);
    let mut c = Checker::new(vec![tp.clone()]);
    c.on_sent(RecordId(0), 0, 0);
    let mut p = logged_once();
    c.scan_logs([&p]);
    c.on_event(&delivered(&tp));
    assert!(c.violations().is_empty());
    truncate_all(&mut p);
    c.scan_logs([&p]);
    assert_eq!(c.violations()[0].kind, ViolationKind::Lost);
}

#[test]
fn ack_of_unlogged_record_is_lost() {
    let tp = TopicPartition::new("t", 0);
    let mut c = Checker::new(vec![tp.clone()]);
    c.on_sent(RecordId(0), 0, 0);
    c.on_event(&delivered(&tp));
    assert_eq!(c.violations()[0].kind, ViolationKind::Lost);
    c.on_event(&delivered(&tp));
    assert_eq!(c.violations()[1].kind, ViolationKind::ResolvedTwice);
    assert_eq!(c.tally(None).lost, 1);
}
