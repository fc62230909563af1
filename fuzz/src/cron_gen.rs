//! Valid cron expressions built from structured `Arbitrary` fields, rendered to text together
//! with the reference's view of them (plain sets, computed here without the core's parser).

use arbitrary::Arbitrary;

use crate::reference::RefCron;

/// One item of a field's comma list. Variants that make no sense for a field fall back to a
/// plain value, so every rendering is valid cron.
#[derive(Arbitrary, Debug, Clone)]
pub enum Item {
    Star,
    StarStep(u8),
    Value(u8),
    Range(u8, u8),
    RangeStep(u8, u8, u8),
    /// A month or weekday name; a value elsewhere.
    Name(u8),
    /// `?` in day-of-month / day-of-week; `*` elsewhere.
    Question,
    /// `L` in day-of-month, `<w>L` in day-of-week (a name when the byte is >= 128).
    Last(u8),
    /// `<w>#<n>` in day-of-week.
    Nth(u8, u8),
}

#[derive(Arbitrary, Debug, Clone)]
pub struct FieldGen {
    pub first: Item,
    pub more: Vec<Item>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Second,
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

impl Kind {
    /// The values an item may name (day-of-week admits 7 for Sunday, as cronie does).
    fn bounds(self) -> (u32, u32) {
        match self {
            Kind::Second | Kind::Minute => (0, 59),
            Kind::Hour => (0, 23),
            Kind::DayOfMonth => (1, 31),
            Kind::Month => (1, 12),
            Kind::DayOfWeek => (0, 7),
        }
    }
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// What one field means: the value set plus day-of-month / day-of-week extras.
#[derive(Debug, Clone, Default)]
pub struct FieldSet {
    /// Bit `v` for value `v` (day-of-week still uses 7 for Sunday here; `RefCron` folds it).
    pub values: u64,
    pub last: bool,
    pub last_weekdays: u8,
    pub nth: Vec<(u32, u32)>,
}

fn value(kind: Kind, raw: u8) -> u32 {
    let (lo, hi) = kind.bounds();
    lo + u32::from(raw) % (hi - lo + 1)
}

fn name(kind: Kind, v: u32) -> String {
    match kind {
        Kind::Month => MONTHS[(v - 1) as usize].to_string(),
        Kind::DayOfWeek => DAYS[(v % 7) as usize].to_string(),
        _ => v.to_string(),
    }
}

fn step(kind: Kind, raw: u8) -> u32 {
    1 + u32::from(raw) % kind.bounds().1
}

fn add_range(set: &mut FieldSet, lo: u32, hi: u32, step: u32) {
    let mut v = lo;
    while v <= hi {
        set.values |= 1 << v;
        v += step;
    }
}

fn render_item(kind: Kind, item: &Item, set: &mut FieldSet) -> String {
    let (lo, hi) = kind.bounds();
    let dayish = matches!(kind, Kind::DayOfMonth | Kind::DayOfWeek);
    match *item {
        Item::Star => {
            add_range(set, lo, hi, 1);
            "*".into()
        }
        Item::Question if dayish => {
            add_range(set, lo, hi, 1);
            "?".into()
        }
        Item::Question => render_item(kind, &Item::Star, set),
        Item::StarStep(s) => {
            let s = step(kind, s);
            add_range(set, lo, hi, s);
            format!("*/{s}")
        }
        Item::Value(v) => {
            let v = value(kind, v);
            add_range(set, v, v, 1);
            v.to_string()
        }
        Item::Name(v) => {
            let v = value(kind, v);
            add_range(set, v, v, 1);
            name(kind, v)
        }
        Item::Range(a, b) | Item::RangeStep(a, b, _) => {
            let (a2, b2) = (value(kind, a), value(kind, b));
            let (a2, b2) = (a2.min(b2), a2.max(b2));
            // `sun` is 0, so a named weekday range cannot end at 7.
            let named = matches!(kind, Kind::Month | Kind::DayOfWeek)
                && (a ^ b) & 0x80 != 0
                && !(kind == Kind::DayOfWeek && b2 == 7);
            let text = if named {
                format!("{}-{}", name(kind, a2), name(kind, b2))
            } else {
                format!("{a2}-{b2}")
            };
            if let Item::RangeStep(_, _, s) = *item {
                let s = step(kind, s);
                add_range(set, a2, b2, s);
                format!("{text}/{s}")
            } else {
                add_range(set, a2, b2, 1);
                text
            }
        }
        Item::Last(_) if kind == Kind::DayOfMonth => {
            set.last = true;
            "L".into()
        }
        Item::Last(w) if kind == Kind::DayOfWeek => {
            let d = u32::from(w) % 8;
            set.last_weekdays |= 1 << (d % 7);
            if w >= 128 {
                format!("{}L", name(kind, d))
            } else {
                format!("{d}L")
            }
        }
        Item::Nth(w, n) if kind == Kind::DayOfWeek => {
            let d = u32::from(w) % 8;
            let n = 1 + u32::from(n) % 5;
            set.nth.push((d % 7, n));
            format!("{d}#{n}")
        }
        Item::Last(v) | Item::Nth(v, _) => render_item(kind, &Item::Value(v), set),
    }
}

/// Renders a field (at most four items) and returns its text and meaning.
pub fn render_field(kind: Kind, gen: &FieldGen) -> (String, FieldSet) {
    let mut set = FieldSet::default();
    let mut parts = vec![render_item(kind, &gen.first, &mut set)];
    for item in gen.more.iter().take(3) {
        parts.push(render_item(kind, item, &mut set));
    }
    (parts.join(","), set)
}

const MACROS: [(&str, [&str; 5]); 7] = [
    ("@yearly", ["0", "0", "1", "1", "*"]),
    ("@annually", ["0", "0", "1", "1", "*"]),
    ("@monthly", ["0", "0", "1", "*", "*"]),
    ("@weekly", ["0", "0", "*", "*", "0"]),
    ("@daily", ["0", "0", "*", "*", "*"]),
    ("@midnight", ["0", "0", "*", "*", "*"]),
    ("@hourly", ["0", "*", "*", "*", "*"]),
];

fn macro_field(text: &str) -> FieldGen {
    let first = if text == "*" {
        Item::Star
    } else {
        // Values are normalized as `low + raw % span`, so subtract the field's low bound.
        Item::Value(0)
    };
    FieldGen {
        first,
        more: Vec::new(),
    }
}

/// An arbitrary valid cron schedule: fields or a macro, a zone given as a parameter, a
/// `CRON_TZ=` prefix or both, and an explicit daylight-saving policy or none.
#[derive(Arbitrary, Debug, Clone)]
pub struct CronGen {
    pub minute: FieldGen,
    pub hour: FieldGen,
    pub day_of_month: FieldGen,
    pub month: FieldGen,
    pub day_of_week: FieldGen,
    pub second: Option<FieldGen>,
    /// Below 14 picks a macro instead of the fields.
    pub macro_pick: u8,
    pub zone: u8,
    /// 0: `tz` parameter; 1: `CRON_TZ=` prefix; 2: both.
    pub zone_place: u8,
    /// (gap: run_at_gap_end when true, fold: first / last / both).
    pub policy: Option<(bool, u8)>,
    pub upper: bool,
}

/// A rendered cron schedule: the arguments for `Schedule::cron`, the explicit policy and the
/// reference's reading of it.
#[derive(Debug, Clone)]
pub struct CronCase {
    pub expr: String,
    pub tz: Option<&'static str>,
    pub zone: &'static str,
    pub policy: Option<duetime::DstPolicy>,
    pub reference: RefCron,
}

impl CronGen {
    pub fn render(&self) -> CronCase {
        let zone = crate::zone(self.zone);
        let macro_ = (self.macro_pick < 14).then(|| MACROS[usize::from(self.macro_pick) % 7]);
        let gens: [FieldGen; 5] = match macro_ {
            Some((_, texts)) => texts.map(macro_field),
            None => [
                self.minute.clone(),
                self.hour.clone(),
                self.day_of_month.clone(),
                self.month.clone(),
                self.day_of_week.clone(),
            ],
        };
        let kinds = [
            Kind::Minute,
            Kind::Hour,
            Kind::DayOfMonth,
            Kind::Month,
            Kind::DayOfWeek,
        ];
        let rendered: Vec<(String, FieldSet)> = kinds
            .iter()
            .zip(gens.iter())
            .map(|(k, g)| render_field(*k, g))
            .collect();
        let second = match (&self.second, macro_) {
            (Some(g), None) => Some(render_field(Kind::Second, g)),
            _ => None,
        };
        let mut fields_text: Vec<String> = Vec::new();
        if let Some((t, _)) = &second {
            fields_text.push(t.clone());
        }
        fields_text.extend(rendered.iter().map(|(t, _)| t.clone()));
        let mut body = match macro_ {
            Some((name, _)) => name.to_string(),
            None => fields_text.join(" "),
        };
        if self.upper {
            body = body.to_ascii_uppercase();
        }
        let (expr, tz) = match self.zone_place % 3 {
            0 => (body, Some(zone)),
            1 => (format!("CRON_TZ={zone} {body}"), None),
            _ => (format!("CRON_TZ={zone} {body}"), Some(zone)),
        };
        let policy = self.policy.map(|(gap, fold)| duetime::DstPolicy {
            gap: if gap {
                duetime::Gap::RunAtGapEnd
            } else {
                duetime::Gap::Skip
            },
            fold: match fold % 3 {
                0 => duetime::Fold::First,
                1 => duetime::Fold::Last,
                _ => duetime::Fold::Both,
            },
        });
        let [minute, hour, dom, month, dow] = [0, 1, 2, 3, 4].map(|i| &rendered[i]);
        let reference = RefCron::new(
            second.as_ref().map_or(1, |(_, s)| s.values),
            &minute.1,
            &hour.1,
            (&dom.0, &dom.1),
            &month.1,
            (&dow.0, &dow.1),
            !minute.0.starts_with('*') && !hour.0.starts_with('*'),
        );
        CronCase {
            expr,
            tz,
            zone,
            policy,
            reference,
        }
    }
}
