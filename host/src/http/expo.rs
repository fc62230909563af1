//! The Prometheus text exposition format (version 0.0.4), written by hand: a family's
//! `# HELP` and `# TYPE` lines, then its samples with escaped label values. Hand-written
//! rather than through a client library's registry because every value here is computed
//! afresh at each scrape (from the journal, the state and this process's counters): a
//! registry of live metric handles would only be filled and emptied again, and the order of
//! the output is ours to keep deterministic (callers pass `BTreeMap`-ordered series).

use std::fmt::Write;

/// A metric family's type, as `# TYPE` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// A histogram's buckets (upper bounds, ascending, `+Inf` implied), counts, sum and count.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Not cumulative: `counts[i]` is the observations in bucket `i`, the last `+Inf`.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
            count: 0,
        }
    }

    pub fn observe(&mut self, value: f64) {
        let i = self.bounds.partition_point(|b| *b < value);
        self.counts[i] += 1;
        self.sum += value;
        self.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }
}

/// The text of one scrape.
#[derive(Debug, Default)]
pub struct Expo {
    out: String,
}

impl Expo {
    pub fn into_string(self) -> String {
        self.out
    }

    /// Opens a family: its help and type lines.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {}", kind.name());
    }

    /// One sample of the family opened last.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        self.labels(labels, None);
        let _ = writeln!(self.out, " {}", number(value));
    }

    /// A histogram's `_bucket` (cumulative, with `le`), `_sum` and `_count` samples.
    pub fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &Histogram) {
        let mut cumulative = 0;
        for (i, n) in h.counts.iter().enumerate() {
            cumulative += n;
            let le = h.bounds.get(i).map_or("+Inf".to_string(), |b| number(*b));
            let _ = write!(self.out, "{name}_bucket");
            self.labels(labels, Some(&le));
            let _ = writeln!(self.out, " {cumulative}");
        }
        self.sample(&format!("{name}_sum"), labels, h.sum);
        self.sample(&format!("{name}_count"), labels, h.count as f64);
    }

    fn labels(&mut self, labels: &[(&str, &str)], le: Option<&str>) {
        if labels.is_empty() && le.is_none() {
            return;
        }
        self.out.push('{');
        let le = le.map(|v| ("le", v));
        for (i, (k, v)) in labels.iter().copied().chain(le).enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            let _ = write!(self.out, "{k}=\"{}\"", escape(v));
        }
        self.out.push('}');
    }
}

/// A label value as the format escapes it: backslash, double quote and newline.
pub fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// A sample value: integers without a fraction, `+Inf`, `-Inf`, `NaN` as the format spells
/// them.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_with_escaped_labels_and_a_cumulative_histogram() {
        let mut e = Expo::default();
        e.family("x_total", Kind::Counter, "What x counts.");
        e.sample("x_total", &[("job", "a\"b\\c\nd")], 3.0);
        let mut h = Histogram::new(&[0.5, 1.0]);
        h.observe(0.25);
        h.observe(0.75);
        h.observe(7.0);
        e.family("y_seconds", Kind::Histogram, "How long.");
        e.histogram("y_seconds", &[("job", "a")], &h);
        let text = e.into_string();
        assert_eq!(
            text,
            "# HELP x_total What x counts.\n# TYPE x_total counter\n\
             x_total{job=\"a\\\"b\\\\c\\nd\"} 3\n\
             # HELP y_seconds How long.\n# TYPE y_seconds histogram\n\
             y_seconds_bucket{job=\"a\",le=\"0.5\"} 1\n\
             y_seconds_bucket{job=\"a\",le=\"1\"} 2\n\
             y_seconds_bucket{job=\"a\",le=\"+Inf\"} 3\n\
             y_seconds_sum{job=\"a\"} 8\n\
             y_seconds_count{job=\"a\"} 3\n"
        );
    }
}
