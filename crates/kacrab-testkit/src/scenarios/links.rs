//! Link faults through the lying proxy: blackholes (one way and both, connections held
//! open), refused dials and slow links, each shorter than `delivery.timeout.ms` minus
//! `request.timeout.ms`. Liveness is what they check: a fault the producer's budget
//! covers costs time, never records, so on a cluster that heals every record must be
//! acknowledged (Kafka's producer retries until `delivery.timeout.ms`, KIP-91).

use super::*;
use crate::proxy::{Blackhole, Link, Target};

/// `request.timeout.ms` in these scenarios: every blackhole outlasts it several times.
const REQUEST_TIMEOUT_MS: u64 = 1_000;

fn link_shape() -> Shape {
    Shape {
        // Large enough records that a held connection fills its socket buffers.
        value_size: 1_000,
        records: 12_000,
        chunk: 200,
        pause: Duration::from_millis(20),
        props: vec![
            ("request.timeout.ms", "1000"),
            ("delivery.timeout.ms", "30000"),
            // Requests of up to 2 × 256 KB to a node, 5 in flight: more than the socket
            // buffers between the producer and a proxy that stopped reading hold.
            ("batch.size", "262144"),
            ("linger.ms", "20"),
        ],
        ..Shape::default()
    }
}

/// Sets `link` on `target` now and heals that target after `hold` on a timer thread
/// (so the heal does not wait for the burst's hooks).
fn hold_then_heal(ctx: &Ctx, target: Target, link: Link, hold: Duration) -> Result<(), String> {
    let proxy = ctx.proxy().ok_or("no proxy")?;
    proxy.set_link(target.clone(), link)?;
    ctx.event(1);
    ctx.note(format!("{link:?} on {target:?} for {hold:?}"));
    std::thread::Builder::new()
        .name("testkit-heal".into())
        .spawn(move || {
            std::thread::sleep(hold);
            if let Err(e) = proxy.set_link(target, Link::healthy()) {
                eprintln!("testkit: healing a link: {e}");
            }
        })
        .map(|_| ())
        .map_err(|e| format!("spawn heal timer: {e}"))
}

fn with_proxy(ctx: &Ctx) -> Result<(), String> {
    ctx.set_proxy(Proxy::start(&ctx.cluster.bootstrap())?);
    Ok(())
}

/// The proxy target for the leader of `partition`: its upstream address (the cluster
/// knows it; no need to wait for the producer's Metadata to name the node).
fn leader_of(ctx: &Ctx, partition: i32) -> Result<Target, String> {
    let node = ctx
        .cluster
        .leader(&ctx.topic, partition)
        .ok_or_else(|| format!("no leader for partition {partition}"))?;
    let addr = usize::try_from(node)
        .ok()
        .and_then(|n| ctx.cluster.node_addrs().get(n).copied())
        .ok_or_else(|| format!("no address for node {node}"))?;
    Ok(Target::Upstream(addr.to_string()))
}

/// A blackhole both ways between the producer and the leader of partition 0, from chunk
/// 3 for 5 × `request.timeout.ms` (`delivery.timeout.ms` 30 s): its connections stay
/// open and silent, new ones are accepted and held too. After the heal every record must
/// be acknowledged, exactly once, in order.
pub fn blackhole_heals(factory: Factory) -> Result<Report, String> {
    let hold = Duration::from_millis(5 * REQUEST_TIMEOUT_MS);
    run_fake(
        "blackhole_heals",
        factory,
        link_shape(),
        with_proxy,
        move |ctx, k| {
            if k == 3 {
                let node = leader_of(ctx, 0)?;
                hold_then_heal(ctx, node, Link::blackhole(Blackhole::Both), hold)?;
            }
            Ok(Step::Continue)
        },
    )
}

/// One-way blackholes, each 4 × `request.timeout.ms`: from chunk 3 the leader of
/// partition 0 gets the requests and applies them but its responses are held; from
/// chunk 20 the leader of partition 1 (another node where the cluster allows) hears
/// nothing while what it already answered still arrives. Every record acknowledged.
pub fn blackhole_one_way_heals(factory: Factory) -> Result<Report, String> {
    let hold = Duration::from_millis(4 * REQUEST_TIMEOUT_MS);
    run_fake(
        "blackhole_one_way_heals",
        factory,
        link_shape(),
        with_proxy,
        move |ctx, k| {
            let (partition, direction) = match k {
                3 => (0, Blackhole::ToClient),
                20 => (1, Blackhole::ToBroker),
                _ => return Ok(Step::Continue),
            };
            let node = leader_of(ctx, partition)?;
            hold_then_heal(ctx, node, Link::blackhole(direction), hold)?;
            Ok(Step::Continue)
        },
    )
}

/// Every connection cut at chunk 3 and every dial refused for 3 s; meanwhile (and to
/// the end) the leader of partition 2 sits behind a slow link (30 ms per frame, 2 MB/s).
/// Every record acknowledged.
pub fn refused_dials_and_slow_link(factory: Factory) -> Result<Report, String> {
    run_fake(
        "refused_dials_and_slow_link",
        factory,
        link_shape(),
        with_proxy,
        move |ctx, k| {
            if k == 3 {
                let proxy = ctx.proxy().ok_or("no proxy")?;
                let slow = Link::slow(Duration::from_millis(30), Some(2 << 20));
                proxy.set_link(leader_of(ctx, 2)?, slow)?;
                ctx.event(1);
                hold_then_heal(ctx, Target::All, Link::refuse(), Duration::from_secs(3))?;
                proxy.disconnect_all();
            }
            Ok(Step::Continue)
        },
    )
}

/// Kafka's default timeouts scaled down 20×, as a new user meets them: the whole burst
/// (50,000 records of 100 bytes) queued at once, `request.timeout.ms` 1.5 s,
/// `delivery.timeout.ms` 6 s, and the leader of partition 0 blackholed both ways for
/// 2 s from chunk 2 (a 40 s blackhole under the 30 s / 120 s defaults). The fault is
/// shorter than `delivery.timeout.ms` − `request.timeout.ms`: every record acknowledged.
pub fn blackhole_within_budget(factory: Factory) -> Result<Report, String> {
    let hold = Duration::from_millis(2_000);
    let shape = Shape {
        records: 50_000,
        chunk: 5_000,
        pause: Duration::ZERO,
        props: vec![
            ("request.timeout.ms", "1500"),
            ("delivery.timeout.ms", "6000"),
            ("linger.ms", "5"),
            ("retry.backoff.ms", "100"),
            ("retry.backoff.max.ms", "1000"),
        ],
        ..Shape::default()
    };
    run_fake(
        "blackhole_within_budget",
        factory,
        shape,
        with_proxy,
        move |ctx, k| {
            if k == 2 {
                let node = leader_of(ctx, 0)?;
                hold_then_heal(ctx, node, Link::blackhole(Blackhole::Both), hold)?;
            }
            Ok(Step::Continue)
        },
    )
}
