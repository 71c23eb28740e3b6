//! What an application plugs into a producer besides its configuration: a
//! [`Partitioner`] and [`ProducerInterceptor`]s. Kept apart from
//! [`SessionConfig`](crate::SessionConfig) because they are code, not settings (Java
//! loads them from `partitioner.class` and `interceptor.classes`, which kacrab refuses:
//! it cannot load a class by name). Cloning shares the interceptors and copies the
//! partitioner's template, so every producer built from one `Extensions` gets a fresh
//! partitioner of its own (Java instantiates one per producer).

use std::fmt;
use std::sync::Arc;

use crate::interceptor::ProducerInterceptor;
use crate::partitioner::Partitioner;

/// Makes a fresh partitioner for each session.
type PartitionerFactory = Arc<dyn Fn() -> Box<dyn Partitioner> + Send + Sync>;

/// A partitioner and interceptors for a producer; install them in a session with
/// [`Session::install`](crate::Session::install). The drivers take one at build time
/// (`kacrab_tokio::ProducerBuilder::extensions`, `kacrab_blocking::Producer::with_extensions`).
#[derive(Clone, Default)]
pub struct Extensions {
    partitioner: Option<PartitionerFactory>,
    interceptors: Vec<Arc<dyn ProducerInterceptor>>,
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("partitioner", &self.partitioner.as_ref().map(|_| "custom"))
            .field("interceptors", &self.interceptors.len())
            .finish()
    }
}

impl Extensions {
    /// None: Kafka's built-in partitioner and no interceptor.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Partitions records sent without a partition with (a clone of) `partitioner`
    /// instead of Kafka's built-in one, which still decides when it returns `None`.
    /// Replaces an earlier partitioner.
    pub fn partitioner<P>(&mut self, partitioner: P) -> &mut Self
    where
        P: Partitioner + Clone + Sync + 'static,
    {
        self.partitioner = Some(Arc::new(move || Box::new(partitioner.clone())));
        self
    }

    /// Adds `interceptor` after those already added: interceptors run in the order they
    /// were added (see [`ProducerInterceptor`]). Pass an `Arc` to keep a handle on it.
    pub fn interceptor(&mut self, interceptor: impl ProducerInterceptor) -> &mut Self {
        self.interceptors.push(Arc::new(interceptor));
        self
    }

    /// A fresh partitioner, if one was set.
    pub(crate) fn make_partitioner(&self) -> Option<Box<dyn Partitioner>> {
        self.partitioner.as_ref().map(|make| make())
    }

    /// The interceptors, in order.
    pub(crate) fn interceptors(&self) -> impl Iterator<Item = Arc<dyn ProducerInterceptor>> + '_ {
        self.interceptors.iter().cloned()
    }
}
