//! Speed of "the next due time after t", side by side in one run: duetime's compiled cron
//! against the `cron` crate (`Schedule::after(&t).next()`) and croner
//! (`Cron::find_next_occurrence`), in UTC and America/New_York; plus `count_in` over ten
//! years of a per-second schedule. Every call starts from one of 64 instants spread over
//! 2025, the same for every crate, so no answer is cached between calls.
//!
//! Run: `cargo bench --bench schedule -- --warm-up-time 1 --measurement-time 3`;
//! benches/README.md has the table and how it was made.

use std::hint::black_box;
use std::str::FromStr;

use chrono::{DateTime, TimeZone};
use chrono_tz::Tz;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use duetime::{Schedule, Timestamp};

/// `(label, duetime/croner text, cron crate text)`. The `cron` crate wants a seconds field and
/// numbers weekdays 1 = Sunday, so weekdays are spelled by name there; it has no `L`.
const EXPRS: [(&str, &str, Option<&str>); 5] = [
    ("every-5-min", "*/5 * * * *", Some("0 */5 * * * *")),
    ("weekdays-0300", "0 3 * * 1-5", Some("0 0 3 * * Mon-Fri")),
    ("daily-0230", "30 2 * * *", Some("0 30 2 * * *")),
    ("feb-29", "0 0 29 2 *", Some("0 0 0 29 2 *")),
    ("last-day-1015", "15 10 L * *", None),
];

const ZONES: [&str; 2] = ["UTC", "America/New_York"];

/// 64 instants in 2025 (seconds), spread by a fixed linear congruential sequence.
fn starts() -> Vec<i64> {
    let year_start = 1_735_689_600; // 2025-01-01T00:00:00Z
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    (0..64)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            year_start + ((x >> 33) % (365 * 86_400)) as i64
        })
        .collect()
}

fn next_after(c: &mut Criterion) {
    let secs = starts();
    for zone in ZONES {
        let tz: Tz = zone.parse().unwrap();
        let chrono_starts: Vec<DateTime<Tz>> = secs
            .iter()
            .map(|&s| tz.timestamp_opt(s, 0).unwrap())
            .collect();
        let stamps: Vec<Timestamp> = secs.iter().map(|&s| Timestamp::from_secs(s)).collect();
        let mut group = c.benchmark_group(format!("next_after/{zone}"));
        for (label, expr, cron_expr) in EXPRS {
            let ours = Schedule::cron(expr, Some(zone)).unwrap();
            let croner = croner::Cron::from_str(expr).unwrap();
            let cron_crate = cron_expr.map(|e| cron::Schedule::from_str(e).unwrap());

            // The peers must answer the same question: check a few instants away from DST.
            for (t, ct) in stamps.iter().zip(&chrono_starts).take(8) {
                let want = ours.next_after(*t).map(|d| d.as_millis());
                let by_croner = croner
                    .find_next_occurrence(ct, false)
                    .ok()
                    .map(|d| d.timestamp_millis());
                assert_eq!(by_croner, want, "croner {expr} in {zone} after {t}");
                if let Some(s) = &cron_crate {
                    let by_cron = s.after(ct).next().map(|d| d.timestamp_millis());
                    assert_eq!(by_cron, want, "cron {expr} in {zone} after {t}");
                }
            }

            group.bench_function(BenchmarkId::new("duetime", label), |b| {
                let mut i = 0;
                b.iter(|| {
                    i = (i + 1) & 63;
                    black_box(ours.next_after(black_box(stamps[i])))
                })
            });
            if let Some(s) = &cron_crate {
                group.bench_function(BenchmarkId::new("cron", label), |b| {
                    let mut i = 0;
                    b.iter(|| {
                        i = (i + 1) & 63;
                        black_box(s.after(black_box(&chrono_starts[i])).next())
                    })
                });
            }
            group.bench_function(BenchmarkId::new("croner", label), |b| {
                let mut i = 0;
                b.iter(|| {
                    i = (i + 1) & 63;
                    black_box(croner.find_next_occurrence(black_box(&chrono_starts[i]), false))
                })
            });
        }
        group.finish();
    }
}

fn count_in(c: &mut Criterion) {
    let mut group = c.benchmark_group("count_in");
    let (from, to) = (
        Timestamp::from_secs(1_577_836_800), // 2020-01-01
        Timestamp::from_secs(1_893_456_000), // 2030-01-01
    );
    for zone in ZONES {
        let s = Schedule::cron("* * * * * *", Some(zone)).unwrap();
        group.bench_function(BenchmarkId::new("ten-years-every-second", zone), |b| {
            b.iter(|| black_box(s.count_in(black_box(from), black_box(to))))
        });
    }
    group.finish();
}

/// A yearly calendar of 30 holidays, one every 12 days from 3 January (issue 45's bench).
fn holidays() -> duetime::Calendar {
    let spans = (0..30)
        .map(|i| {
            let day = chrono::NaiveDate::from_ymd_opt(2025, 1, 3).unwrap()
                + chrono::Duration::days(12 * i);
            duetime::Span::parse(&day.format("%Y-%m-%d").to_string(), None).unwrap()
        })
        .collect();
    let name = duetime::CalendarName::new("holidays").unwrap();
    duetime::Calendar::new(name, true, spans).unwrap()
}

/// Calendar schedules against the plain cron schedule (issue 45): weekdays at 09:00 in
/// London plain, the same with 30 holidays a year excluded, and the last business day of
/// each month at 09:00 with those holidays; `next_after` from the 64 starts and `count_in`
/// over ten years.
fn calendar(c: &mut Criterion) {
    let zone = Some("Europe/London");
    let plain = Schedule::cron("0 9 * * mon-fri", zone).unwrap();
    let none = duetime::Roll::Stay;
    let excluded = Schedule::calendar(plain.clone(), vec![holidays()], None, none).unwrap();
    let daily = Schedule::cron("0 9 * * *", zone).unwrap();
    let last = duetime::BusinessDay::new(-1).ok();
    let business = Schedule::calendar(daily, vec![holidays()], last, none).unwrap();
    let starts: Vec<Timestamp> = starts().into_iter().map(Timestamp::from_secs).collect();
    let (from, to) = (
        Timestamp::from_secs(1_577_836_800), // 2020-01-01
        Timestamp::from_secs(1_893_456_000), // 2030-01-01
    );
    let mut group = c.benchmark_group("calendar");
    for (label, s) in [
        ("plain", &plain),
        ("holidays", &excluded),
        ("business-day", &business),
    ] {
        group.bench_function(BenchmarkId::new("next_after", label), |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % starts.len();
                black_box(s.next_after(black_box(starts[i])))
            })
        });
        group.bench_function(BenchmarkId::new("count_in-ten-years", label), |b| {
            b.iter(|| black_box(s.count_in(black_box(from), black_box(to))))
        });
    }
    group.finish();
}

criterion_group!(benches, next_after, count_in, calendar);
criterion_main!(benches);
