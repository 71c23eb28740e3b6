//! What one send's completion costs (see Cargo.toml): per send, a value and a key are
//! allocated and dropped (the baseline), and a completion is created, polled once while
//! pending, and completed and polled to its value once `outstanding` newer ones exist.
use std::collections::VecDeque;
use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
struct Instant(u64);
impl Instant {
    fn now() -> Self {
        let t = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
        Instant(t.split_whitespace().next().unwrap().parse().unwrap())
    }
    fn elapsed(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(Instant::now().0 - self.0)
    }
}

type V = [u64; 12]; // 96 B, as Result<RecordMetadata, ProduceError>

fn churn(i: usize) -> (Vec<u8>, String) {
    // what else a send allocates and frees soon (value, key)
    (vec![b'.'; 100 + (i & 7)], i.to_string())
}

fn oneshot(outstanding: usize, total: usize) -> f64 {
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    let mut q = VecDeque::new();
    let t = Instant::now();
    for i in 0..total {
        let c = churn(i);
        let (tx, mut rx) = tokio::sync::oneshot::channel::<V>();
        let _ = Pin::new(&mut rx).poll(&mut cx);
        q.push_back((tx, rx));
        black_box(c);
        if q.len() > outstanding {
            let (tx, mut rx) = q.pop_front().unwrap();
            let _ = tx.send([i as u64; 12]);
            match Pin::new(&mut rx).poll(&mut cx) {
                Poll::Ready(Ok(v)) => {
                    black_box(v);
                }
                _ => panic!(),
            }
        }
    }
    t.elapsed().as_nanos() as f64 / total as f64
}

enum Slot {
    Free,
    Pending(Option<Waker>),
    Done(V),
}
#[derive(Default)]
struct Slab {
    slots: Vec<Slot>,
    free: Vec<u32>,
}
#[derive(Default)]
struct Completions(Mutex<Slab>);
impl Completions {
    fn reserve(&self) -> u32 {
        let mut s = self.0.lock().unwrap();
        match s.free.pop() {
            Some(k) => {
                s.slots[k as usize] = Slot::Pending(None);
                k
            }
            None => {
                s.slots.push(Slot::Pending(None));
                (s.slots.len() - 1) as u32
            }
        }
    }
    fn complete(&self, k: u32, v: V) {
        let mut s = self.0.lock().unwrap();
        if let Slot::Pending(Some(w)) = std::mem::replace(&mut s.slots[k as usize], Slot::Done(v)) {
            drop(s);
            w.wake();
        }
    }
    fn poll(&self, k: u32, cx: &mut Context<'_>) -> Poll<V> {
        let mut s = self.0.lock().unwrap();
        match &mut s.slots[k as usize] {
            Slot::Done(_) => {
                let Slot::Done(v) = std::mem::replace(&mut s.slots[k as usize], Slot::Free) else {
                    unreachable!()
                };
                s.free.push(k);
                Poll::Ready(v)
            }
            Slot::Pending(w) => {
                if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *w = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            Slot::Free => panic!(),
        }
    }
}
struct Fut {
    c: Arc<Completions>,
    k: u32,
}

fn slab(outstanding: usize, total: usize) -> f64 {
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    let c = Arc::new(Completions::default());
    let mut q: VecDeque<(u32, Fut)> = VecDeque::new();
    let t = Instant::now();
    for i in 0..total {
        let ch = churn(i);
        let k = c.reserve();
        let f = Fut {
            c: Arc::clone(&c),
            k,
        };
        let _ = f.c.poll(f.k, &mut cx);
        q.push_back((k, f));
        black_box(ch);
        if q.len() > outstanding {
            let (k, f) = q.pop_front().unwrap();
            c.complete(k, [i as u64; 12]);
            match f.c.poll(f.k, &mut cx) {
                Poll::Ready(v) => {
                    black_box(v);
                }
                _ => panic!(),
            }
        }
    }
    t.elapsed().as_nanos() as f64 / total as f64
}

fn baseline(outstanding: usize, total: usize) -> f64 {
    let mut q: VecDeque<u64> = VecDeque::new();
    let t = Instant::now();
    for i in 0..total {
        let ch = churn(i);
        q.push_back(i as u64);
        black_box(ch);
        if q.len() > outstanding {
            black_box(q.pop_front());
        }
    }
    t.elapsed().as_nanos() as f64 / total as f64
}

fn main() {
    let total = 5_000_000;
    for round in 0..5 {
        for n in [5_000, 300_000] {
            println!(
                "round {round} outstanding {n:>7}: baseline {:.1}, oneshot {:.1} ns/send, slab {:.1} ns/send",
                baseline(n, total),
                oneshot(n, total),
                slab(n, total)
            );
        }
    }
}
