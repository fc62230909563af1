//! Jobs joined by `after` (issue 45) live in one partition: the core knows an upstream only
//! in its downstream's own state, and refuses a downstream whose upstream it does not know.
//! So a store of several partitions routes a whole **chain**, every job joined to another
//! by an `after` link either way (a connected part of the graph, not only one line from a
//! root), by one of its jobs: its **anchor**, the first by name of its jobs that run after
//! none of the chain (a root), a root with a concurrency key before one without (a lane
//! must stay whole). A chain with one root routes where that root does, as before chains
//! could join; a job without `after` that none waits for is its own chain and routes
//! exactly as before.
//!
//! A chain also moves as one: the jobs of it that live in one partition go together, in
//! one transaction, or wait together while any of them has a run open
//! ([`relocate_chain`](crate::relocate_chain)), so a downstream is never apart from its
//! upstream and none of its due times is skipped for an upstream that only moved.

use std::collections::{BTreeMap, BTreeSet};

use duetime::JobDef;

use crate::{route, Partition, PartitionCount};

/// The chains of a set of definitions: which chain each is in, each chain's anchor and
/// its jobs, upstreams first.
#[derive(Debug, Clone)]
pub struct Chains {
    /// Per definition: its chain's number.
    chain: Vec<usize>,
    /// Per chain: its anchor (an index into the definitions).
    anchor: Vec<usize>,
    /// Per chain: its definitions, upstreams before their downstreams.
    members: Vec<Vec<usize>>,
}

impl Chains {
    /// The chains of `defs`. Names in `after` that are not among `defs` join nothing.
    pub fn new(defs: &[JobDef]) -> Chains {
        let index: BTreeMap<&str, usize> = defs
            .iter()
            .enumerate()
            .map(|(i, d)| (d.name.as_str(), i))
            .collect();
        let mut joined = Joined::new(defs.len());
        let mut is_root = vec![true; defs.len()];
        for (i, d) in defs.iter().enumerate() {
            for &j in d.after.iter().filter_map(|u| index.get(u.as_str())) {
                if j != i {
                    joined.join(i, j);
                    is_root[i] = false;
                }
            }
        }
        let mut number: BTreeMap<usize, usize> = BTreeMap::new();
        let chain: Vec<usize> = (0..defs.len())
            .map(|i| {
                let next = number.len();
                *number.entry(joined.find(i)).or_insert(next)
            })
            .collect();
        let mut members = vec![Vec::new(); number.len()];
        for i in upsert_order(defs) {
            members[chain[i]].push(i);
        }
        let anchor = members
            .iter()
            .map(|m| anchor_of(defs, m, &is_root))
            .collect();
        Chains {
            chain,
            anchor,
            members,
        }
    }

    /// The anchor of definition `i`'s chain: the definition the chain routes by.
    pub fn anchor(&self, i: usize) -> usize {
        self.anchor[self.chain[i]]
    }

    /// The definitions of `i`'s chain (`i` among them), upstreams first.
    pub fn members(&self, i: usize) -> &[usize] {
        &self.members[self.chain[i]]
    }

    /// Where each of `defs` (the definitions these chains were made of) lives among
    /// `count` partitions: where its chain's anchor routes.
    pub fn routes(&self, defs: &[JobDef], count: PartitionCount) -> Vec<Partition> {
        (0..defs.len())
            .map(|i| route(&defs[self.anchor(i)], count))
            .collect()
    }
}

/// Where each of `defs` lives among `count` partitions: with its chain ([`Chains`]).
pub fn chain_routes(defs: &[JobDef], count: PartitionCount) -> Vec<Partition> {
    if count == PartitionCount::ONE {
        return vec![Partition::FIRST; defs.len()];
    }
    Chains::new(defs).routes(defs, count)
}

/// The anchor among `members`: the first root by name, a root with a concurrency key
/// before one without; in a chain with no root (a cycle, which the core refuses), the
/// first member by name.
fn anchor_of(defs: &[JobDef], members: &[usize], is_root: &[bool]) -> usize {
    let rank = |i: usize| {
        let d = &defs[i];
        (!is_root[i], d.concurrency_key.is_none(), d.name.as_str())
    };
    members
        .iter()
        .copied()
        .min_by(|&a, &b| rank(a).cmp(&rank(b)))
        .expect("a chain has a job")
}

/// The order to give the core `defs` in: each after the ones of them it names in `after`,
/// ties (and what no order fits, a cycle the core refuses anyway) in the given order.
/// Upstreams not among `defs` do not hold a job back: the core knows them or refuses them.
pub fn upsert_order(defs: &[JobDef]) -> Vec<usize> {
    let refs: Vec<&JobDef> = defs.iter().collect();
    let (mut order, stuck) = upstreams_first(&refs);
    order.extend(stuck);
    order
}

/// Kahn's sort of `defs` by `after`, the first ready job in the given order each time: the
/// order of those that fit one, and the rest (in or after a cycle) in the given order.
pub fn upstreams_first(defs: &[&JobDef]) -> (Vec<usize>, Vec<usize>) {
    let index: BTreeMap<&str, usize> = defs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    let mut waits_for = vec![0usize; defs.len()];
    let mut downstreams: Vec<Vec<usize>> = vec![Vec::new(); defs.len()];
    for (i, d) in defs.iter().enumerate() {
        for j in d.after.iter().filter_map(|u| index.get(u.as_str())) {
            if *j != i {
                waits_for[i] += 1;
                downstreams[*j].push(i);
            }
        }
    }
    let mut ready: BTreeSet<usize> = (0..defs.len()).filter(|i| waits_for[*i] == 0).collect();
    let mut order = Vec::with_capacity(defs.len());
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &k in &downstreams[i] {
            waits_for[k] -= 1;
            if waits_for[k] == 0 {
                ready.insert(k);
            }
        }
    }
    let placed: BTreeSet<usize> = order.iter().copied().collect();
    let stuck = (0..defs.len()).filter(|i| !placed.contains(i)).collect();
    (order, stuck)
}

/// Union-find over definitions' indices (path halving; the smaller root wins, so the
/// result never depends on the order links are met in beyond which sets join).
struct Joined {
    parent: Vec<usize>,
}

impl Joined {
    fn new(n: usize) -> Joined {
        Joined {
            parent: (0..n).collect(),
        }
    }

    fn find(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        let (low, high) = (a.min(b), a.max(b));
        self.parent[high] = low;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route_of;
    use crate::testing::name;
    use duetime::{Duration, Schedule};

    fn count(n: u64) -> PartitionCount {
        PartitionCount::new(n).unwrap()
    }

    fn def(n: &str, after: &[&str], key: Option<&str>) -> JobDef {
        let schedule = Schedule::every(Duration::from_mins(5), Duration::from_secs(0)).unwrap();
        let mut d = JobDef::new(name(n), schedule);
        d.after = after.iter().map(|u| name(u)).collect();
        d.concurrency_key = key.map(str::to_string);
        d
    }

    /// Names that route to pairwise different partitions among 8, so a test shows jobs
    /// put together by their chain and not by chance.
    fn apart(n: usize) -> Vec<String> {
        let mut seen = BTreeSet::new();
        (0..)
            .map(|i| format!("job_{i}"))
            .filter(|s| seen.insert(route_of(None, s, count(8))))
            .take(n)
            .collect()
    }

    #[test]
    fn a_line_from_one_root_routes_with_the_root_and_a_lone_job_as_before() {
        let n = apart(4);
        let defs = vec![
            def(&n[2], &[&n[1]], None),
            def(&n[1], &[&n[0]], None),
            def(&n[0], &[], None),
            def(&n[3], &[], None),
        ];
        let routes = chain_routes(&defs, count(8));
        let root = route_of(None, &n[0], count(8));
        assert_eq!(routes[..3], [root, root, root]);
        assert_eq!(routes[3], route_of(None, &n[3], count(8)));
        assert_eq!(chain_routes(&defs, count(1)), [Partition::FIRST; 4]);
        let chains = Chains::new(&defs);
        assert_eq!(chains.members(0), [2, 1, 0], "upstreams first");
        assert_eq!(chains.members(3), [3]);
    }

    /// A job that runs after two roots joins their chains: all of it lives in one
    /// partition (the core there must know both upstreams), the first root by name's.
    #[test]
    fn a_job_after_two_roots_joins_their_chains_in_the_first_roots_partition() {
        let n = apart(3);
        let (b, a, d) = (&n[0], &n[1], &n[2]);
        let (first, second) = if a < b { (a, b) } else { (b, a) };
        let defs = vec![def(b, &[], None), def(d, &[a, b], None), def(a, &[], None)];
        let routes = chain_routes(&defs, count(8));
        let home = route_of(None, first, count(8));
        assert_eq!(routes, [home, home, home]);
        assert_ne!(home, route_of(None, second, count(8)), "moved by the chain");
        let chains = Chains::new(&defs);
        assert_eq!(
            chains.members(1).last(),
            Some(&1),
            "the join after both roots"
        );
    }

    /// A root with a concurrency key anchors its chain, whatever the other roots' names,
    /// so its lane stays where its key puts it.
    #[test]
    fn a_keyed_root_anchors_its_chain() {
        let defs = vec![
            def("a", &[], None),
            def("z", &[], Some("db")),
            def("join", &["a", "z"], None),
        ];
        let db = route_of(Some("db"), "", count(8));
        assert_eq!(chain_routes(&defs, count(8)), [db, db, db]);
    }

    /// A cycle (which the core refuses) still routes, by its first job by name, and
    /// names outside the definitions join nothing.
    #[test]
    fn a_cycle_and_an_unknown_upstream_still_route() {
        let defs = vec![
            def("b", &["a"], None),
            def("a", &["b"], None),
            def("c", &["elsewhere"], None),
        ];
        let routes = chain_routes(&defs, count(8));
        let a = route_of(None, "a", count(8));
        assert_eq!(routes[..2], [a, a]);
        assert_eq!(routes[2], route_of(None, "c", count(8)));
    }
}
