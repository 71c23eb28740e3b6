//! Shrinks a diverging trace to a minimal one that still diverges the same way.

use crate::trace::{Op, Trace};

/// Greedy delta debugging over the operations, then simpler values: drops chunks of
/// operations, then single ones, then turns answers into plain `NONE`, as long as
/// `still_fails` holds. `still_fails` is called on batches of candidates (one JVM per
/// batch); it returns, per candidate, whether it still shows the divergence.
pub fn shrink(trace: &Trace, still_fails: &mut dyn FnMut(&[Trace]) -> Vec<bool>) -> Trace {
    let mut best = trace.clone();
    let mut chunk = best.ops.len().div_ceil(2).max(1);
    loop {
        let mut candidates = Vec::new();
        let mut start = 0;
        while start < best.ops.len() {
            let mut t = best.clone();
            let end = (start + chunk).min(t.ops.len());
            t.ops.drain(start..end);
            candidates.push(t);
            start += chunk;
        }
        // Simpler answers.
        for (i, op) in best.ops.iter().enumerate() {
            if let Op::Answer { p: Some(_), .. } = op {
                let mut t = best.clone();
                if let Op::Answer { p, .. } = &mut t.ops[i] {
                    *p = None;
                }
                candidates.push(t);
            }
            if let Op::Tick { ms } = op {
                if *ms > 50 {
                    let mut t = best.clone();
                    t.ops[i] = Op::Tick { ms: ms / 2 };
                    candidates.push(t);
                }
            }
        }
        if candidates.is_empty() {
            return best;
        }
        let verdicts = still_fails(&candidates);
        if let Some(pos) = verdicts.iter().position(|&f| f) {
            best = candidates.swap_remove(pos);
            chunk = chunk.min(best.ops.len().div_ceil(2)).max(1);
            continue;
        }
        if chunk == 1 {
            return best;
        }
        chunk = chunk.div_ceil(2);
    }
}
