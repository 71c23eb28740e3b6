//! The state of the link between the client and a broker: blackholes, refused dials,
//! slow links.

use std::time::Duration;

/// Which directions of a link a blackhole stops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Blackhole {
    /// Everything passes.
    #[default]
    Open,
    /// Requests are held (the broker hears nothing); responses already sent still pass.
    ToBroker,
    /// Responses are held (the client hears nothing); requests still reach the broker and
    /// are applied.
    ToClient,
    /// Nothing passes either way.
    Both,
}

impl Blackhole {
    pub(super) fn holds(self, direction: Flow) -> bool {
        matches!(
            (self, direction),
            (Self::Both, _) | (Self::ToBroker, Flow::ToBroker) | (Self::ToClient, Flow::ToClient)
        )
    }
}

/// What happens to a new connection to a broker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dial {
    /// Accepted and connected upstream.
    #[default]
    Accept,
    /// Accepted and closed at once, before a byte passes (the client sees its connection
    /// end), as a broker that is down but whose host is up.
    Refuse,
}

/// The state of the link between the client and one broker (or every broker).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Link {
    /// Directions that pass nothing (open connections stay open).
    pub blackhole: Blackhole,
    /// What a new connection gets.
    pub dial: Dial,
    /// Each frame is held this long before it is forwarded (frames of one connection one
    /// after another, so this also bounds throughput: a slow link).
    pub latency: Duration,
    /// Bytes per second each direction of a connection may carry (`None`: no ceiling).
    pub bandwidth: Option<u64>,
}

impl Link {
    /// A healthy link.
    pub fn healthy() -> Self {
        Self::default()
    }

    /// A blackhole in `direction`, dials still accepted (and then held too).
    pub fn blackhole(direction: Blackhole) -> Self {
        Self {
            blackhole: direction,
            ..Self::default()
        }
    }

    /// New connections refused; open ones untouched.
    pub fn refuse() -> Self {
        Self {
            dial: Dial::Refuse,
            ..Self::default()
        }
    }

    /// A slow link: `latency` per frame, at most `bandwidth` bytes per second.
    pub fn slow(latency: Duration, bandwidth: Option<u64>) -> Self {
        Self {
            latency,
            bandwidth,
            ..Self::default()
        }
    }
}

/// Which links a [`Proxy::set_link`](super::Proxy::set_link) changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Every broker's (a broker's own setting, if any, wins).
    All,
    /// The broker at this upstream `host:port`.
    Upstream(String),
    /// The broker with this node id, as a Metadata response the proxy relayed named it.
    Node(i32),
}

/// A direction of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flow {
    /// Requests.
    ToBroker,
    /// Responses.
    ToClient,
}
