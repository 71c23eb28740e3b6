//! The core's share of Kafka's producer metrics: cumulative counters ([`Stats`]) and,
//! for a caller that asks for them, one [`MetricSample`] per event that Kafka's windowed
//! sensors record (a batch drained, records retried or failed, a produce answer).
//!
//! The core has no clock and no windows: it counts, and it says what happened at the
//! time of the input that made it happen. Rates, averages and maxima over
//! `metrics.sample.window.ms` live in the session (`kacrab-driver`'s `metrics` module),
//! which drains [`Producer::poll_metric_sample`] after every input, so a sample's time is
//! that input's `now`. Samples are kept only after [`Producer::enable_metric_samples`]:
//! a caller that never drains them pays nothing and holds nothing.
//!
//! The events are the ones Kafka's `Sender` and `SenderMetricsRegistry` record:
//! `Sender.SenderMetrics.updateProduceRequestMetrics` at drain (batch size, queue time,
//! compression rate, record size, records per request, per-topic bytes and records),
//! `recordRetries` when a batch is re-enqueued, `recordErrors` when a batch fails,
//! the throttle time when a produce response arrives (`recordLatency` is the
//! session's: it sees the write), and
//! `batch-split-rate` when a batch is split after MESSAGE_TOO_LARGE.

use alloc::collections::VecDeque;
use core::time::Duration;

use crate::error::KafkaError;
use crate::io::Event;
use crate::producer::Producer;
use crate::record::RECORD_BATCH_OVERHEAD;
use crate::types::{BatchId, NodeId, ProducerIdAndEpoch, Topic};

/// Counters for reports, tests and metrics. They never influence behaviour. Each counts
/// from the producer's creation and never goes down.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Records accepted by `send`.
    pub records_sent: u64,
    /// Produce requests handed to the driver.
    pub produce_requests: u64,
    /// Batches put back in the queue for another attempt.
    pub retries: u64,
    /// Epoch bumps applied (KIP-360), including new producer ids after exhaustion.
    pub epoch_bumps: u64,
    /// Batches split after MESSAGE_TOO_LARGE.
    pub splits: u64,
    /// Batches failed by delivery.timeout.ms.
    pub expired_batches: u64,
    /// Requests the core timed out (request.timeout.ms).
    pub request_timeouts: u64,
    /// Metadata requests emitted.
    pub metadata_requests: u64,
    /// Batches sent uncompressed because the registered compressor failed on them.
    pub compression_failures: u64,
    /// Records put back in the queue for another attempt, once per attempt (Kafka's
    /// `record-retry-total`).
    pub records_retried: u64,
    /// Records reported failed (Kafka's `record-error-total`, for records that entered
    /// the producer).
    pub records_failed: u64,
    /// Records reported failed with `possibly_written: true`: their fate in the log is
    /// unknown (kacrab's own).
    pub possibly_written_failures: u64,
    /// Records reported delivered.
    pub records_delivered: u64,
    /// Times the producer id itself changed (a first id, or a new one after epoch
    /// exhaustion or a fatal-free reset), as reported by `Event::ProducerIdChanged`
    /// (kacrab's own). An epoch change under the same id counts in `epoch_changes`.
    pub producer_id_changes: u64,
    /// Times the epoch changed under the same producer id (KIP-360 bumps, transaction
    /// version 2's bump at every end of transaction, KIP-588 bumps) (kacrab's own).
    pub epoch_changes: u64,
    /// Times a partition's next batch was refused OUT_OF_ORDER while possibly written
    /// and a later batch was resent alone to learn how far the log got (kacrab's own;
    /// see the crate documentation on sequencing).
    pub probes: u64,
}

/// One event a windowed metric records, in the order they happened. See the module
/// documentation for which of Kafka's sensors each one feeds.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum MetricSample {
    /// A batch left in a produce request (every attempt, as in Kafka's
    /// `updateProduceRequestMetrics`).
    BatchDrained {
        /// Its topic.
        topic: Topic,
        /// Records in it.
        records: u32,
        /// Its size on the wire in bytes (Kafka's `estimatedSizeInBytes` of a closed
        /// batch is its final size).
        bytes: usize,
        /// Its records section as sent (after the codec, without the batch header).
        records_bytes: usize,
        /// Its records section before compression. `records_bytes / uncompressed_bytes`
        /// is Kafka's `compression-rate` (`MemoryRecordsBuilder`'s
        /// `actualCompressionRatio`: the written records section over the uncompressed
        /// one, headers excluded; 1.0 for an uncompressed batch).
        uncompressed_bytes: usize,
        /// The largest record in it, estimated as `buffer.memory` charges it (Kafka's
        /// `ProducerBatch.maxRecordSize`).
        max_record_size: usize,
        /// From its first record's append to this drain (Kafka's `queueTimeMs`:
        /// `drainedMs - createdMs`).
        queue_time: Duration,
    },
    /// A produce request was handed out (Kafka's `records-per-request`).
    ProduceRequest {
        /// The broker.
        node: NodeId,
        /// Records in all its batches.
        records: u32,
    },
    /// A batch went back to the queue for another attempt.
    Retried {
        /// Its topic.
        topic: Topic,
        /// Its partition.
        partition: i32,
        /// Its records.
        records: u32,
        /// Why: the partition's error in the produce answer, or `NetworkException` when
        /// the request's connection failed or timed out.
        cause: KafkaError,
    },
    /// Records were reported failed.
    Failed {
        /// Their topic.
        topic: Topic,
        /// How many.
        records: u32,
        /// Whether they may be in the log.
        possibly_written: bool,
    },
    /// A produce response arrived for an outstanding request. (Its latency is the
    /// session's to measure: from the write on the wire, which the core does not see.)
    ProduceAnswered {
        /// The broker.
        node: NodeId,
        /// The broker's `throttle_time_ms`.
        throttle: Duration,
    },
    /// A batch was split after MESSAGE_TOO_LARGE.
    BatchSplit,
    /// Metadata was applied (Kafka's `metadata-age` counts from here).
    MetadataUpdated,
}

/// The samples waiting for the caller, kept only once enabled.
#[derive(Debug, Default)]
pub(crate) struct Samples {
    enabled: bool,
    queue: VecDeque<MetricSample>,
    /// The identity last reported by an `Event::ProducerIdChanged`, to tell a new id
    /// from a new epoch.
    last_identity: Option<ProducerIdAndEpoch>,
}

impl Samples {
    fn push(&mut self, sample: MetricSample) {
        if self.enabled {
            self.queue.push_back(sample);
        }
    }
}

/// A batch's (wire, records section as sent, records section uncompressed) sizes. The
/// uncompressed size is recorded where the batch closed (and kept by a split's pieces).
fn batch_sizes(b: &crate::batch::ProducerBatch) -> (usize, usize, usize) {
    let wire = b.data.len();
    (
        wire,
        wire.saturating_sub(RECORD_BATCH_OVERHEAD),
        b.uncompressed_size(),
    )
}

impl Producer {
    /// From now on, keep a [`MetricSample`] for every event a windowed metric records,
    /// until [`Producer::poll_metric_sample`] takes it. A caller that never enables them
    /// pays nothing for them.
    pub fn enable_metric_samples(&mut self) {
        self.samples.enabled = true;
    }

    /// The oldest metric sample not yet taken, if any (see [`MetricSample`]).
    pub fn poll_metric_sample(&mut self) -> Option<MetricSample> {
        self.samples.queue.pop_front()
    }

    /// Bytes of `buffer.memory` charged by records without an outcome (Kafka's
    /// `buffer-total-bytes - buffer-available-bytes`).
    #[must_use]
    pub fn buffered_bytes(&self) -> usize {
        self.acc.buffered_bytes()
    }

    /// Partitions whose newest batch has an unknown fate, blocking new sequences until
    /// later acks or an epoch bump resolve it (kacrab's own metric).
    #[must_use]
    pub fn unresolved_partitions(&self) -> usize {
        self.bump.unresolved_len()
    }

    /// Produce requests handed out and not yet answered (Kafka's `requests-in-flight`
    /// counts every request on the wire; the session adds its own and the others).
    #[must_use]
    pub fn outstanding_requests(&self) -> usize {
        self.requests.len()
    }

    /// The batches of a produce request just built for `node`: one sample each, then
    /// one for the request.
    pub(crate) fn metrics_drained(&mut self, node: NodeId, taken: &[BatchId]) {
        if !self.samples.enabled {
            return;
        }
        let mut total = 0u32;
        for &id in taken {
            let Some(b) = self.batches.get(id) else {
                continue;
            };
            let (bytes, records_bytes, uncompressed_bytes) = batch_sizes(b);
            let records = u32::try_from(b.record_count).unwrap_or(0);
            total = total.saturating_add(records);
            let sample = MetricSample::BatchDrained {
                topic: self.acc[b.partition].tp.topic.clone(),
                records,
                bytes,
                records_bytes,
                uncompressed_bytes,
                max_record_size: b.max_record_size,
                queue_time: self.now.saturating_duration_since(b.created),
            };
            self.samples.push(sample);
        }
        self.samples.push(MetricSample::ProduceRequest {
            node,
            records: total,
        });
    }

    /// A batch goes back to the queue for another attempt, because of `cause`.
    pub(crate) fn metrics_retried(&mut self, id: BatchId, cause: KafkaError) {
        let Some(b) = self.batches.get(id) else {
            return;
        };
        let records = u32::try_from(b.record_count).unwrap_or(0);
        self.stats.records_retried += u64::from(records);
        let tp = &self.acc[b.partition].tp;
        let (topic, partition) = (tp.topic.clone(), tp.partition);
        self.samples.push(MetricSample::Retried {
            topic,
            partition,
            records,
            cause,
        });
    }

    /// A produce answer from `node`.
    pub(crate) fn metrics_answered(&mut self, node: NodeId, throttle: Duration) {
        self.samples
            .push(MetricSample::ProduceAnswered { node, throttle });
    }

    /// A batch was split.
    pub(crate) fn metrics_split(&mut self) {
        self.samples.push(MetricSample::BatchSplit);
    }

    /// Metadata was applied.
    pub(crate) fn metrics_metadata(&mut self) {
        self.samples.push(MetricSample::MetadataUpdated);
    }

    /// An event on its way to the application: outcomes and identity changes count.
    pub(crate) fn metrics_event(&mut self, event: &Event) {
        match event {
            Event::Delivered { records, .. } => {
                self.stats.records_delivered += records.len() as u64;
            }
            Event::Failed {
                partition,
                records,
                possibly_written,
                ..
            } => {
                let n = records.len() as u64;
                self.stats.records_failed += n;
                if *possibly_written {
                    self.stats.possibly_written_failures += n;
                }
                self.samples.push(MetricSample::Failed {
                    topic: partition.topic.clone(),
                    records: u32::try_from(n).unwrap_or(u32::MAX),
                    possibly_written: *possibly_written,
                });
            }
            Event::ProducerIdChanged { id } => {
                match self.samples.last_identity {
                    Some(last) if last.id == id.id => {
                        if last.epoch != id.epoch {
                            self.stats.epoch_changes += 1;
                        }
                    }
                    _ => self.stats.producer_id_changes += 1,
                }
                self.samples.last_identity = Some(*id);
            }
            Event::TransactionCompleted { .. } | Event::Fatal { .. } => {}
        }
    }
}
