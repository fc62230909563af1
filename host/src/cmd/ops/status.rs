//! `duetime status`: which daemons run on the store, from what the core last heard from
//! each (its clocks, its drain) and what each said of itself when it started (its pid,
//! machine, jobs file, run directories); and each partition of the store: its jobs, its
//! version, its owner columns when set, or why its state is refused.

use std::collections::BTreeMap;
use std::io::{self, Write};

use duetime::{ProcessId, State, Timestamp};
use duetime_host::store::daemons::host_name;
use duetime_host::store::parts::{health, pending, PartitionHealth, Pending};
use duetime_host::store::{partitions_text, DaemonInfo, Store};
use duetime_loop::PartitionCount;

use super::{json, open, relative, store_failed, StoreArgs};

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
    /// List every dead incarnation on its own line (by default, those beyond the newest
    /// three or silent for over an hour are folded into one summary line)
    #[arg(long)]
    pub all: bool,
}

/// At most this many dead incarnations (gone or silent) get a line of their own.
const DEAD_SHOWN: usize = 3;
/// A dead incarnation last heard from longer ago than this is folded whatever the count.
const DEAD_FOLDED_AFTER_MS: i64 = 60 * 60 * 1000;

/// How a daemon is doing, as far as the store can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Health {
    /// Heard from within its lease (two ticks).
    Alive,
    Draining,
    /// Not heard from for longer than its lease: stopped, stuck or cut off; its runs'
    /// leases lapse.
    Silent,
    /// On this machine, and its pid is not running.
    Gone,
}

impl Health {
    fn dead(self) -> bool {
        matches!(self, Health::Silent | Health::Gone)
    }

    fn name(self) -> &'static str {
        match self {
            Health::Alive => "alive",
            Health::Draining => "draining",
            Health::Silent => "silent",
            Health::Gone => "gone",
        }
    }
}

/// One daemon's line.
struct Daemon {
    process: ProcessId,
    info: Option<DaemonInfo>,
    last_heard: Option<Timestamp>,
    health: Health,
    runs: usize,
}

fn pid_alive(pid: u32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

fn daemons(state: &State, infos: Vec<DaemonInfo>, now: Timestamp) -> Vec<Daemon> {
    let globals = state.globals();
    let lease = state.config().tick.as_millis().saturating_mul(2) as i64;
    let mut runs: BTreeMap<ProcessId, usize> = BTreeMap::new();
    for (_, r) in state.records() {
        if let Some(p) = r.run_holder() {
            *runs.entry(p).or_default() += 1;
        }
    }
    let mut by_process: BTreeMap<ProcessId, Option<DaemonInfo>> =
        globals.processes().keys().map(|p| (*p, None)).collect();
    for info in infos {
        by_process.insert(info.process, Some(info));
    }
    let here = host_name();
    by_process
        .into_iter()
        .map(|(process, info)| {
            let rec = globals.processes().get(&process);
            let last_heard = rec.map(|r| r.last_wall());
            let local_dead = info
                .as_ref()
                .is_some_and(|i| i.host == here && !pid_alive(i.pid));
            let silent = last_heard.is_none_or(|t| now.as_millis() - t.as_millis() > lease);
            let health = match (local_dead, rec.is_some_and(|r| r.draining()), silent) {
                (true, _, _) => Health::Gone,
                (_, _, true) => Health::Silent,
                (_, true, _) => Health::Draining,
                _ => Health::Alive,
            };
            Daemon {
                process,
                info,
                last_heard,
                health,
                runs: runs.get(&process).copied().unwrap_or(0),
            }
        })
        .collect()
}

/// The daemons of a store of several partitions: each daemon's heartbeat (`members`) says
/// whether it is alive or stopping (a daemon there is no process of any partition's state;
/// its seats are, one per partition), and its runs are the open runs of the partitions
/// whose lease it holds.
fn partitioned_daemons<S: Store>(
    store: &mut S,
    infos: Vec<DaemonInfo>,
    parts: &[PartitionHealth],
    now: Timestamp,
) -> Result<Vec<Daemon>, duetime_host::store::StoreError> {
    let members = store.members()?;
    let mut runs: BTreeMap<ProcessId, usize> = BTreeMap::new();
    for h in parts.iter().filter(|h| h.refused.is_none()) {
        let Some(owner) = h
            .row
            .owner
            .filter(|_| h.row.lease_until.is_some_and(|u| u > now))
        else {
            continue;
        };
        let open = store
            .state_in(h.row.partition)?
            .records()
            .filter(|(_, r)| r.run_holder().is_some())
            .count();
        *runs.entry(ProcessId(owner.max(0) as u64)).or_default() += open;
    }
    let lease = store
        .state_in(duetime_loop::Partition::FIRST)?
        .config()
        .lease_ttl;
    let here = host_name();
    Ok(infos
        .into_iter()
        .map(|info| {
            let member = members.iter().find(|m| m.process == info.process);
            let local_dead = info.host == here && !pid_alive(info.pid);
            let health = match member {
                _ if local_dead => Health::Gone,
                Some(m) if m.alive_until <= now => Health::Silent,
                Some(m) if m.stopping => Health::Draining,
                Some(_) => Health::Alive,
                None => Health::Silent,
            };
            Daemon {
                process: info.process,
                last_heard: member.map(|m| {
                    Timestamp::from_millis(m.alive_until.as_millis() - lease.as_millis() as i64)
                }),
                runs: runs.get(&info.process).copied().unwrap_or(0),
                info: Some(info),
                health,
            }
        })
        .collect())
}

pub fn status(args: &StatusArgs, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let mut store = match open(&args.store, args.json, out, err)? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let now = crate::cmd::now();
    let infos = match store.daemons() {
        Ok(i) => i,
        Err(e) => return store_failed(&e, args.json, out, err),
    };
    let describe = store.describe().to_string();
    let count = store.partitions();
    let parts = match health(&mut store) {
        Ok(p) => p,
        Err(e) => return store_failed(&e, args.json, out, err),
    };
    let moves = match pending(&mut store) {
        Ok(m) => m,
        Err(e) => return store_failed(&e, args.json, out, err),
    };
    // The daemons are partition 0's processes: a store of several whose partition 0 is
    // refused still shows its partitions, and says why there is no more.
    let state = match store.state() {
        Ok(s) => s,
        Err(e) if parts.len() > 1 => {
            return without_daemons(&describe, (count, &parts), now, &e, args.json, out, err)
        }
        Err(e) => return store_failed(&e, args.json, out, err),
    };
    let config = *state.config();
    let owner = state.owner(now);
    let list = if count == PartitionCount::ONE {
        daemons(state, infos, now)
    } else {
        match partitioned_daemons(&mut store, infos, &parts, now) {
            Ok(l) => l,
            Err(e) => return store_failed(&e, args.json, out, err),
        }
    };
    let coordination = serde_json::to_value(config.coordination)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    if args.json {
        let v = serde_json::json!({
            "ok": true,
            "store": describe,
            "now": json::time(now),
            "tick": config.tick.to_string(),
            "coordination": coordination,
            "owner": owner.map(|o| serde_json::json!({
                "process": o.holder.to_string(), "fence": o.fence.to_string(), "until": json::time(o.until),
            })),
            "daemons": list.iter().map(daemon_json).collect::<Vec<_>>(),
            "partitions": parts.iter().map(|h| partition_json(h, now)).collect::<Vec<_>>(),
            "pending_moves": moves.iter().map(pending_json).collect::<Vec<_>>(),
        });
        writeln!(out, "{v:#}")?;
        return Ok(refused_code(&parts));
    }
    writeln!(
        out,
        "store {describe}: tick {}, coordination {coordination}, {}",
        config.tick,
        partitions_text(count)
    )?;
    for h in &parts {
        writeln!(out, "{}", partition_line(h, now))?;
    }
    for m in &moves {
        writeln!(out, "{}", pending_line(m, now))?;
    }
    if let Some(o) = owner {
        writeln!(
            out,
            "owner {} ({}, lease until {})",
            o.holder, o.fence, o.until
        )?;
    }
    write_daemons(out, &list, args.all, now)?;
    Ok(refused_code(&parts))
}

/// A line per daemon (the dead beyond a few folded into one, unless `all`).
fn write_daemons(
    out: &mut dyn Write,
    list: &[Daemon],
    all: bool,
    now: Timestamp,
) -> io::Result<()> {
    if list.is_empty() {
        return writeln!(out, "no daemon has run on this store in the last day");
    }
    let (shown, folded) = if all {
        (list.iter().collect(), Vec::new())
    } else {
        fold(list, now)
    };
    for d in shown {
        writeln!(out, "{}", daemon_line(d, now))?;
    }
    if let Some(line) = folded_line(&folded, now) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// 1 when any partition is refused (what `status` shows is then incomplete), else 0.
fn refused_code(parts: &[PartitionHealth]) -> u8 {
    u8::from(parts.iter().any(|h| h.refused.is_some()))
}

/// `status` of a store of several partitions whose partition 0 (where the daemons
/// register) is refused: the partitions, and why the daemons cannot be shown. Exit 1.
fn without_daemons(
    describe: &str,
    (count, parts): (PartitionCount, &[PartitionHealth]),
    now: Timestamp,
    e: &duetime_host::store::StoreError,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    if as_json {
        let v = serde_json::json!({
            "ok": true,
            "store": describe,
            "daemons": null,
            "partitions": parts.iter().map(|h| partition_json(h, now)).collect::<Vec<_>>(),
        });
        writeln!(out, "{v:#}")?;
    } else {
        writeln!(out, "store {describe}: {}", partitions_text(count))?;
        for h in parts {
            writeln!(out, "{}", partition_line(h, now))?;
        }
    }
    writeln!(err, "duetime status: the daemons are not shown: {e}")?;
    Ok(1)
}

/// A partition's line, indented under the store's: `  p3  12 job(s), version 40`, its
/// owner columns when set, or `refused: WHY`.
fn partition_line(h: &PartitionHealth, now: Timestamp) -> String {
    let r = &h.row;
    let mut line = format!(
        "  {:<5} {} job(s), version {}",
        r.partition.to_string(),
        r.jobs,
        r.version
    );
    if let Some(owner) = r.owner {
        line.push_str(&format!(", owner p{owner}, epoch {}", r.epoch));
    }
    if let Some(until) = r.lease_until {
        line.push_str(&format!(", lease until {until}"));
    }
    // Whole seconds: a person reads how far behind, not the milliseconds.
    let lag = duetime::Duration::from_secs(h.lag(now).as_millis() / 1000);
    if let Some(since) = h.oldest_waiting.filter(|_| !lag.is_zero()) {
        line.push_str(&format!(", behind {lag} (waits on {since})"));
    }
    if let Some(why) = &h.refused {
        line.push_str(&format!("; refused: {why}"));
    }
    line
}

/// A partition as JSON: its row, its lag (`lag_ms`: how long its oldest waiting due time,
/// `oldest_waiting`, has been past; 0 when none is) and its refusal.
fn partition_json(h: &PartitionHealth, now: Timestamp) -> serde_json::Value {
    let r = &h.row;
    serde_json::json!({
        "partition": r.partition.to_string(),
        "jobs": r.jobs,
        "version": r.version,
        "owner": r.owner.map(|o| format!("p{o}")),
        "epoch": r.epoch,
        "lease_until": json::time_opt(r.lease_until),
        "oldest_waiting": json::time_opt(h.oldest_waiting),
        "lag_ms": h.lag(now).as_millis(),
        "refused": h.refused,
    })
}

/// A pending move's line: where its job goes, and what it waits for.
fn pending_line(m: &Pending, now: Timestamp) -> String {
    let job = &m.pending.def.name;
    let asked = format!(
        "asked by {} {}",
        m.pending.actor.0,
        relative(now, m.pending.asked_at)
    );
    match (m.from, m.run) {
        (Some(from), Some(run)) => format!(
            "  move  {job}: {from} to {}, when its run {run} has ended; its new definition \
             applies then ({asked})",
            m.to
        ),
        (Some(from), None) => format!(
            "  move  {job}: {from} to {}, its run has ended: the daemon stepping {from} moves \
             it after its next turn ({asked})",
            m.to
        ),
        (None, _) => {
            format!("  move  {job}: the job is gone; forgotten at the next turn ({asked})")
        }
    }
}

fn pending_json(m: &Pending) -> serde_json::Value {
    serde_json::json!({
        "job": m.pending.def.name.as_str(),
        "from": m.from.map(|p| p.to_string()),
        "to": m.to.to_string(),
        "waits_for": m.run.map(|r| r.to_string()),
        "actor": m.pending.actor.0,
        "asked_at": json::time(m.pending.asked_at),
    })
}

/// Splits the daemons into those with a line each and the dead ones folded: every live
/// or draining one is shown, and of the dead (gone, silent) the `DEAD_SHOWN` heard from
/// most recently within the last `DEAD_FOLDED_AFTER_MS`. A daemon restarted by systemd
/// every night leaves a row per incarnation for a day; twenty rows of `gone` hide the one
/// that matters.
fn fold(list: &[Daemon], now: Timestamp) -> (Vec<&Daemon>, Vec<&Daemon>) {
    let mut dead: Vec<&Daemon> = list.iter().filter(|d| d.health.dead()).collect();
    // The most recently heard first; never heard counts as oldest.
    dead.sort_by_key(|d| std::cmp::Reverse(d.last_heard.map(|t| t.as_millis())));
    let recent = |d: &&&Daemon| {
        d.last_heard
            .is_some_and(|t| now.as_millis().saturating_sub(t.as_millis()) <= DEAD_FOLDED_AFTER_MS)
    };
    let kept: Vec<ProcessId> = dead
        .iter()
        .filter(recent)
        .take(DEAD_SHOWN)
        .map(|d| d.process)
        .collect();
    list.iter()
        .partition(|d| !d.health.dead() || kept.contains(&d.process))
}

/// The one line for the folded dead incarnations: how many, which, how they died and when
/// the latest was heard; `None` when nothing was folded.
fn folded_line(folded: &[&Daemon], now: Timestamp) -> Option<String> {
    let first = folded.iter().map(|d| d.process).min()?;
    let last = folded.iter().map(|d| d.process).max()?;
    let gone = folded.iter().filter(|d| d.health == Health::Gone).count();
    let heard = folded
        .iter()
        .filter_map(|d| d.last_heard)
        .max()
        .map_or("never".to_string(), |t| relative(now, t));
    let range = if first == last {
        first.to_string()
    } else {
        format!("{first}..{last}")
    };
    Some(format!(
        "{} earlier incarnation(s) folded ({range}: {gone} gone, {} silent), the latest last heard {heard}; `duetime status --all` lists each",
        folded.len(),
        folded.len() - gone
    ))
}

fn daemon_line(d: &Daemon, now: Timestamp) -> String {
    let heard = d
        .last_heard
        .map_or("never".to_string(), |t| relative(now, t));
    let mut line = format!(
        "{:<5} {:<8} last heard {heard}, {} run(s) held",
        d.process.to_string(),
        d.health.name(),
        d.runs
    );
    if let Some(i) = &d.info {
        line.push_str(&format!(
            "; pid {} on {}, started {} ({}), jobs {}, runs {}",
            i.pid,
            i.host,
            i.started,
            relative(now, i.started),
            i.jobs_file,
            i.runs
        ));
    }
    line
}

fn daemon_json(d: &Daemon) -> serde_json::Value {
    serde_json::json!({
        "process": d.process.to_string(),
        "state": d.health.name(),
        "last_heard": json::time_opt(d.last_heard),
        "runs": d.runs,
        "pid": d.info.as_ref().map(|i| i.pid),
        "host": d.info.as_ref().map(|i| i.host.clone()),
        "started": json::time_opt(d.info.as_ref().map(|i| i.started)),
        "jobs_file": d.info.as_ref().map(|i| i.jobs_file.clone()),
        "runs_dir": d.info.as_ref().map(|i| i.runs.clone()),
        "version": d.info.as_ref().map(|i| i.version.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn daemon(n: u64, health: Health, heard: &str) -> Daemon {
        Daemon {
            process: ProcessId(n),
            info: None,
            last_heard: Some(at(heard)),
            health,
            runs: 0,
        }
    }

    #[test]
    fn many_dead_incarnations_fold_into_one_line_and_the_living_stay() {
        let now = at("2026-12-05T12:00:00Z");
        let mut list: Vec<Daemon> = (1..=20)
            .map(|n| daemon(n, Health::Gone, &format!("2026-12-05T11:{:02}:00Z", 20 + n)))
            .collect();
        list.push(daemon(21, Health::Alive, "2026-12-05T11:59:59Z"));
        let (shown, folded) = fold(&list, now);
        let shown: Vec<u64> = shown.iter().map(|d| d.process.0).collect();
        assert_eq!(
            shown,
            [18, 19, 20, 21],
            "the three newest dead and the living one"
        );
        assert_eq!(folded.len(), 17);
        let line = folded_line(&folded, now).unwrap();
        assert!(
            line.starts_with("17 earlier incarnation(s) folded (p1..p17: 17 gone, 0 silent)"),
            "{line}"
        );
        assert!(line.contains("--all"), "{line}");
    }

    #[test]
    fn a_few_recent_dead_are_shown_and_old_ones_fold_whatever_the_count() {
        let now = at("2026-12-05T12:00:00Z");
        let list = vec![
            daemon(1, Health::Silent, "2026-12-05T09:00:00Z"),
            daemon(2, Health::Gone, "2026-12-05T11:30:00Z"),
            daemon(3, Health::Alive, "2026-12-05T11:59:59Z"),
        ];
        let (shown, folded) = fold(&list, now);
        let shown: Vec<u64> = shown.iter().map(|d| d.process.0).collect();
        assert_eq!(shown, [2, 3]);
        let line = folded_line(&folded, now).unwrap();
        assert!(
            line.starts_with("1 earlier incarnation(s) folded (p1: 0 gone, 1 silent)"),
            "{line}"
        );
        let (_, none) = fold(&list[1..], now);
        assert!(folded_line(&none, now).is_none());
    }
}
