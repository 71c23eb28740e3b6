//! The application's interceptors (Java's `ProducerInterceptor`): each sees every record
//! before the producer takes it in, and every record's outcome.
//!
//! Rules, as Java's `ProducerInterceptors` applies them:
//!
//! * **In order.** Interceptors run in the order they were installed; each `on_send`
//!   sees the record as the one before it left it.
//! * **A failing interceptor loses no record.** An error from `on_send` is logged and
//!   the record goes on as it was before that interceptor (its changes are dropped);
//!   an error from `on_acknowledgement` is logged and changes nothing. Java's
//!   `ProducerInterceptors.onSend` catches and logs, continuing with the record as it
//!   was. A panic is not caught: it unwinds through the session as any other panic in
//!   the driver's loop does (the driver reports [`ProduceError::Terminated`]).
//! * **Every outcome exactly once.** `on_acknowledgement` is called once per record
//!   sent after the interceptor was installed, when the session hands out the record's
//!   [`Completion::Record`] and before the application sees it (Java calls
//!   `onAcknowledgement` before the send's callback), for a delivery as well as for a
//!   record refused before it was ever sent (Java's `ProducerInterceptors.onSendError`).
//!   It carries the record's headers as the producer took them in (after every
//!   `on_send`), as Java's `onAcknowledgement(metadata, exception, headers)` does since
//!   KIP-512: an interceptor finds what it stamped on the record there (the
//!   `opentelemetry` feature's interceptor finds its span through the `traceparent` it
//!   injected).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use kacrab_idempotence::{Header, Topic};

use crate::completion::{Completion, ProduceError, SendId};
use crate::record::{ProducerRecord, RecordMetadata};

/// Why an interceptor could not do its work. The session logs it (feature `tracing`)
/// and goes on; it must not hold a secret.
pub type InterceptorError = Box<dyn std::error::Error + Send + Sync>;

/// The outcome of one record, as [`ProducerInterceptor::on_acknowledgement`] sees it.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Acknowledgement<'a> {
    /// The send, as [`Session::send`](crate::Session::send) returned it.
    pub id: SendId,
    /// The record's topic (after `on_send`).
    pub topic: &'a Topic,
    /// The record's headers, as the producer took the record in (after every
    /// interceptor's `on_send`; KIP-512).
    pub headers: &'a [Header],
    /// Where it landed (partition, offset), or why it did not, with
    /// [`ProduceError::possibly_written`].
    pub outcome: Result<&'a RecordMetadata, &'a ProduceError>,
}

/// An application's interceptor (Java's `ProducerInterceptor`): installed in a session
/// with [`Session::add_interceptor`](crate::Session::add_interceptor), or in a driver's
/// producer through [`Extensions::interceptor`](crate::Extensions::interceptor).
///
/// Both methods run on the driver's loop, between its other work: they should be quick
/// and must not block. State shared with the application goes behind the interceptor's
/// own lock or atomics.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use kacrab_driver::{Acknowledgement, Header, InterceptorError, ProducerInterceptor, ProducerRecord};
///
/// /// Tags every record with the service's name and counts failures.
/// #[derive(Default)]
/// struct Tagger {
///     failed: AtomicU64,
/// }
///
/// impl ProducerInterceptor for Tagger {
///     fn on_send(&self, record: &mut ProducerRecord) -> Result<(), InterceptorError> {
///         record.headers.push(Header {
///             key: "origin".into(),
///             value: Some("billing".into()),
///         });
///         Ok(())
///     }
///
///     fn on_acknowledgement(&self, ack: &Acknowledgement<'_>) -> Result<(), InterceptorError> {
///         if ack.outcome.is_err() {
///             self.failed.fetch_add(1, Ordering::Relaxed);
///         }
///         Ok(())
///     }
/// }
///
/// let mut record = ProducerRecord::unkeyed("events", "hello");
/// Tagger::default().on_send(&mut record).unwrap();
/// assert_eq!(record.headers[0].key, "origin");
/// ```
pub trait ProducerInterceptor: Send + Sync + 'static {
    /// Sees (and may change) `record` before the producer takes it in: add headers,
    /// change the key, value, topic or partition. Called once per send, before the
    /// partitioner. On an error the record goes on as it was before this call.
    ///
    /// # Errors
    /// Why the interceptor could not handle the record; logged, the record is kept.
    fn on_send(&self, record: &mut ProducerRecord) -> Result<(), InterceptorError> {
        let _ = record;
        Ok(())
    }

    /// Sees the outcome of one record: once per record, delivered or failed.
    ///
    /// # Errors
    /// Why the interceptor could not handle the outcome; logged and ignored.
    fn on_acknowledgement(&self, ack: &Acknowledgement<'_>) -> Result<(), InterceptorError> {
        let _ = ack;
        Ok(())
    }
}

impl<T: ProducerInterceptor + ?Sized> ProducerInterceptor for Arc<T> {
    fn on_send(&self, record: &mut ProducerRecord) -> Result<(), InterceptorError> {
        (**self).on_send(record)
    }

    fn on_acknowledgement(&self, ack: &Acknowledgement<'_>) -> Result<(), InterceptorError> {
        (**self).on_acknowledgement(ack)
    }
}

/// A session's interceptors, in installation order, and the topic and headers of every
/// record they have yet to see the outcome of.
#[derive(Default)]
pub(crate) struct Interceptors {
    chain: Vec<Arc<dyn ProducerInterceptor>>,
    /// The records sent while the chain was not empty, until their outcome.
    pending: BTreeMap<SendId, Awaited>,
}

/// What the interceptors are shown of a record with its outcome: its topic and headers
/// as the producer took it in (the record itself is moved into the producer).
#[derive(Debug)]
pub(crate) struct Awaited {
    topic: Topic,
    headers: Vec<Header>,
}

impl fmt::Debug for Interceptors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interceptors")
            .field("installed", &self.chain.len())
            .field("pending", &self.pending.len())
            .finish()
    }
}

impl Interceptors {
    pub(crate) fn add(&mut self, interceptor: Arc<dyn ProducerInterceptor>) {
        self.chain.push(interceptor);
    }

    /// `record` after every interceptor's `on_send`, in order; an interceptor that fails
    /// leaves it as it was before its call.
    pub(crate) fn on_send(&self, mut record: ProducerRecord) -> ProducerRecord {
        for (index, interceptor) in self.chain.iter().enumerate() {
            let before = record.clone();
            if let Err(error) = interceptor.on_send(&mut record) {
                crate::trace::interceptor_failed("on_send", index, record.topic.as_str(), &*error);
                record = before;
            }
        }
        record
    }

    /// What of `record` to keep for its outcome: `None` without interceptors, so that a
    /// session without them copies nothing.
    pub(crate) fn awaited(&self, record: &ProducerRecord) -> Option<Awaited> {
        (!self.chain.is_empty()).then(|| Awaited {
            topic: record.topic.clone(),
            headers: record.headers.clone(),
        })
    }

    /// Remembers that send `id` awaits its outcome (`awaited` from [`Self::awaited`],
    /// taken before the record was sent).
    pub(crate) fn sent(&mut self, id: SendId, awaited: Option<Awaited>) {
        if let Some(awaited) = awaited {
            let earlier = self.pending.insert(id, awaited);
            debug_assert!(earlier.is_none(), "send ids are unique");
        }
    }

    /// Gives a record's outcome to every interceptor, once.
    pub(crate) fn completed(&mut self, done: &Completion) {
        let Completion::Record { id, outcome } = done else {
            return;
        };
        // A record sent before the first interceptor was installed is not theirs.
        let Some(Awaited { topic, headers }) = self.pending.remove(id) else {
            return;
        };
        let ack = Acknowledgement {
            id: *id,
            topic: &topic,
            headers: &headers,
            outcome: outcome.as_ref(),
        };
        for (index, interceptor) in self.chain.iter().enumerate() {
            if let Err(error) = interceptor.on_acknowledgement(&ack) {
                crate::trace::interceptor_failed(
                    "on_acknowledgement",
                    index,
                    topic.as_str(),
                    &*error,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use bytes::Bytes;

    use super::*;

    /// The outcomes interceptors were shown: the send, whether it was delivered, and
    /// the record's header keys.
    type Shown = Arc<Mutex<Vec<(SendId, bool, Vec<Bytes>)>>>;

    /// Appends its name as a header, or fails after changing the record.
    struct Tag {
        name: &'static str,
        fail: bool,
        seen: Shown,
    }

    impl ProducerInterceptor for Tag {
        fn on_send(&self, record: &mut ProducerRecord) -> Result<(), InterceptorError> {
            record.headers.push(Header {
                key: self.name.into(),
                value: None,
            });
            if self.fail {
                record.value = None;
                return Err("refused".into());
            }
            Ok(())
        }

        fn on_acknowledgement(&self, ack: &Acknowledgement<'_>) -> Result<(), InterceptorError> {
            let keys = ack.headers.iter().map(|h| h.key.clone()).collect();
            self.seen
                .lock()
                .unwrap()
                .push((ack.id, ack.outcome.is_ok(), keys));
            if self.fail {
                return Err("refused".into());
            }
            Ok(())
        }
    }

    fn chain(fails: [bool; 3]) -> (Interceptors, Shown) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut chain = Interceptors::default();
        for (name, fail) in ["a", "b", "c"].into_iter().zip(fails) {
            chain.add(Arc::new(Tag {
                name,
                fail,
                seen: Arc::clone(&seen),
            }));
        }
        (chain, seen)
    }

    fn header_keys(record: &ProducerRecord) -> Vec<&str> {
        record
            .headers
            .iter()
            .map(|h| std::str::from_utf8(&h.key).unwrap())
            .collect()
    }

    /// Java's `ProducerInterceptors.onSend`: in order, and a failing interceptor's
    /// changes are dropped while the others' stay.
    #[test]
    fn on_send_runs_in_order_and_a_failure_keeps_the_record_as_it_was() {
        let (all_ok, _) = chain([false, false, false]);
        let record = all_ok.on_send(ProducerRecord::unkeyed("t", "v"));
        assert_eq!(header_keys(&record), ["a", "b", "c"]);

        let (middle_fails, _) = chain([false, true, false]);
        let record = middle_fails.on_send(ProducerRecord::unkeyed("t", "v"));
        assert_eq!(header_keys(&record), ["a", "c"]);
        assert_eq!(
            record.value.as_deref(),
            Some(&b"v"[..]),
            "b's change is dropped"
        );
    }

    /// Every interceptor sees each outcome once, even after another one failed, with the
    /// record's headers as the producer took it in (Java's `ProducerInterceptors
    /// .onAcknowledgement(metadata, exception, headers)`, KIP-512); records sent before
    /// any interceptor was installed are not reported.
    #[test]
    fn every_interceptor_sees_each_outcome_once() {
        let (mut chain, seen) = chain([true, false, false]);
        let done = |id, ok: bool| Completion::Record {
            id: SendId(id),
            outcome: if ok {
                Ok(RecordMetadata {
                    topic: "t".into(),
                    partition: 0,
                    offset: Some(7),
                    timestamp: 0,
                    timestamp_type: crate::TimestampType::CreateTime,
                })
            } else {
                Err(ProduceError::Send(kacrab_idempotence::SendError::Closed))
            },
        };
        let tagged = chain.on_send(ProducerRecord::unkeyed("t", "v").with_header("own", None));
        let first = chain.awaited(&tagged);
        chain.sent(SendId(1), first);
        let second = chain.awaited(&ProducerRecord::unkeyed("t", "w"));
        chain.sent(SendId(2), second);
        chain.completed(&done(0, true)); // not sent through the chain
        chain.completed(&done(2, false));
        chain.completed(&done(1, true));
        chain.completed(&done(1, true)); // a second completion is not reported
                                         // "a" failed its on_send, so its header is not on the record; "b" and "c" are.
        let keys = |names: &[&'static str]| names.iter().map(|n| Bytes::from(*n)).collect();
        let expected: Vec<(SendId, bool, Vec<Bytes>)> = [
            (SendId(2), false, Vec::new()),
            (SendId(1), true, keys(&["own", "b", "c"])),
        ]
        .into_iter()
        .flat_map(|e| [e.clone(), e.clone(), e])
        .collect();
        assert_eq!(*seen.lock().unwrap(), expected);
    }
}
