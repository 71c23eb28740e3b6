//! Link faults through the lying proxy: blackholes (one way and both, connections held
//! open), refused dials and slow links, each shorter than `delivery.timeout.ms` minus
//! `request.timeout.ms`. Liveness is what they check: a fault the producer's budget
//! covers costs time, never records, so on a cluster that heals every record must be
//! acknowledged (Kafka's producer retries until `delivery.timeout.ms`, KIP-91).

use super::*;
use std::sync::atomic::{AtomicBool, Ordering};

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
    hold_then_heal_and(ctx, target, link, hold, || {})
}

/// [`hold_then_heal`], then `healed` on the timer thread once the link is healthy.
fn hold_then_heal_and(
    ctx: &Ctx,
    target: Target,
    link: Link,
    hold: Duration,
    healed: impl FnOnce() + Send + 'static,
) -> Result<(), String> {
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
            healed();
        })
        .map(|_| ())
        .map_err(|e| format!("spawn heal timer: {e}"))
}

/// The proxy's cap on its sockets' receive buffers: a blackhole (which stops reading)
/// then pushes back on the producer's writes after a few tens of KiB, as a real
/// partition does once the producer's socket send buffer is full.
const PROXY_RECEIVE_BUFFER: usize = 16 * 1024;

fn with_proxy(ctx: &Ctx) -> Result<(), String> {
    ctx.set_proxy(Proxy::with_receive_buffer(
        &ctx.cluster.bootstrap(),
        PROXY_RECEIVE_BUFFER,
    )?);
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

/// One broker stops reading (the leader of partition 0, its connections held open: the
/// proxy's capped receive buffers and an 8 KiB `send.buffer.bytes` fill within a request)
/// for 3 × `request.timeout.ms`, while the burst goes on (every link 30 ms slow); `delivery.timeout.ms` is its
/// minimum, `linger.ms` + `request.timeout.ms`. The stalled leader's records may fail
/// (possibly written); every record to a partition led by another broker must be
/// acknowledged, and so must every record sent after the heal. A driver that writes from
/// its one loop and blocks in the full socket stalls every connection with it: its
/// healthy batches then outlive their delivery timeout and fail (issue 18, item 3).
pub fn stalled_peer_spares_the_others(factory: Factory) -> Result<Report, String> {
    const REQUEST_TIMEOUT: Duration = Duration::from_millis(2_000);
    const CHUNK: u64 = 50;
    let hold = 3 * REQUEST_TIMEOUT;
    let shape = Shape {
        value_size: 1_000,
        records: 8_000,
        chunk: CHUNK,
        pause: Duration::from_millis(50),
        all_acked: false,
        props: vec![
            ("request.timeout.ms", "2000"),
            ("linger.ms", "5"),
            ("delivery.timeout.ms", "2005"),
            ("batch.size", "65536"),
            ("send.buffer.bytes", "8192"),
        ],
        ..Shape::default()
    };
    let healed = Arc::new(AtomicBool::new(false));
    let mut after_heal_noted = false;
    run_fake(
        "stalled_peer_spares_the_others",
        factory,
        shape,
        // Every link 30 ms slow, so the healthy brokers always have requests out when
        // the stalled one's socket fills: a loop blocked in that write cannot handle
        // their answers before the requests' delivery timeout.
        |ctx| {
            with_proxy(ctx)?;
            let slow = Link::slow(Duration::from_millis(30), None);
            ctx.proxy().ok_or("no proxy")?.set_link(Target::All, slow)
        },
        move |ctx, k| {
            if k == 10 {
                let stalled = ctx
                    .cluster
                    .leader(&ctx.topic, 0)
                    .ok_or("no leader for partition 0")?;
                let partitions = ctx.partitions;
                let healthy: Vec<bool> = (0..partitions)
                    .map(|p| ctx.cluster.leader(&ctx.topic, p) != Some(stalled))
                    .collect();
                if !healthy.contains(&true) {
                    return Err(format!("node {stalled} leads every partition"));
                }
                ctx.require_acked("partitions led by a broker that kept reading", move |i| {
                    healthy[crate::checker::record_partition(i, partitions) as usize]
                });
                let target = leader_of(ctx, 0)?;
                ctx.note(format!("node {stalled} stops reading"));
                let healed = Arc::clone(&healed);
                hold_then_heal_and(
                    ctx,
                    target,
                    Link::blackhole(Blackhole::ToBroker),
                    hold,
                    move || {
                        healed.store(true, Ordering::SeqCst);
                    },
                )?;
            }
            if !after_heal_noted && healed.load(Ordering::SeqCst) {
                after_heal_noted = true;
                let from = k * CHUNK;
                ctx.require_acked("the partitions after the heal", move |i| i >= from);
            }
            Ok(Step::Continue)
        },
    )
}
