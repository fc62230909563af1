//! Chains of jobs in the worlds (issue 45's `after`): in about two worlds of five, one to
//! three jobs wait for earlier jobs of the world (so no chain is a cycle), a chain of two
//! or three, now and then a diamond (a job waiting for an upstream and for that upstream's
//! other downstream). A downstream takes its first upstream's schedule, the schedules
//! people may switch it to, its oracle and its runs' durations, so the two stay aligned
//! until people switch one and not the other (then the core refuses the downstream's new
//! schedule, or skips its due times the upstream no longer has).
//!
//! Drawn from a stream of its own (`Stream::Chains`), so the rest of a world is drawn as
//! before, in the default worlds since issue 45's chains held (`--no-chains` leaves them
//! out); the mistakes table's `after` rule is drawn only in worlds that have a chain.

use rand::Rng;

use crate::gen::{stream_rng, SimJob, Stream, WorldConfig};

/// Makes some jobs of the world wait for earlier ones.
pub(crate) fn draw_chains(cfg: &WorldConfig, jobs: &mut [SimJob]) {
    let mut rng = stream_rng(cfg.seed, Stream::Chains);
    if jobs.len() < 2 || !rng.gen_bool(0.4) {
        return;
    }
    let chains = rng.gen_range(1..=3usize.min(jobs.len() - 1));
    let mut plan: Vec<(usize, usize, bool)> = (0..chains)
        .map(|_| {
            let down = rng.gen_range(1..jobs.len());
            (down, rng.gen_range(0..down), rng.gen_bool(0.5))
        })
        .collect();
    // In order of the downstream, so an upstream that waits for another is aligned first.
    plan.sort_unstable();
    plan.dedup_by_key(|p| p.0);
    for (down, up, diamond) in plan {
        let mut after = vec![jobs[up].def.name.clone()];
        // A diamond: also wait for another downstream of the same upstream (same schedule).
        let sibling = (up + 1..down).find(|&k| jobs[k].def.after.first() == Some(&after[0]));
        if let Some(k) = sibling.filter(|_| diamond) {
            after.push(jobs[k].def.name.clone());
        }
        let upstream = jobs[up].clone();
        let job = &mut jobs[down];
        job.def.after = after;
        job.def.schedule = upstream.def.schedule;
        job.spec = upstream.spec;
        job.alternatives = upstream.alternatives;
        // Jitter and run lengths fit the upstream's schedules, not the ones it was drawn for.
        job.def.jitter = upstream.def.jitter;
        job.behaviour.duration_ms = upstream.behaviour.duration_ms;
    }
}
