//! Cron text into bit sets: the cronie / Vixie dialect (five fields, an optional leading
//! seconds field, names, ranges, lists, steps, macros, `CRON_TZ=`) plus the `L` and `#`
//! extensions. Every refusal names the field, the offending text and what is accepted.

use std::fmt;

use super::fields::Fields;

/// A cron field, named as errors and docs name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The optional leading field of a six-field expression (0-59).
    Second,
    /// 0-59.
    Minute,
    /// 0-23.
    Hour,
    /// 1-31, or `L` for the month's last day.
    DayOfMonth,
    /// 1-12 or `jan`-`dec`.
    Month,
    /// 0-7 (0 and 7 are Sunday) or `sun`-`sat`, with `5L` and `5#3`.
    DayOfWeek,
}

impl Field {
    /// Its name in messages and docs (`day-of-month`).
    pub fn name(self) -> &'static str {
        match self {
            Field::Second => "second",
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "day-of-month",
            Field::Month => "month",
            Field::DayOfWeek => "day-of-week",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What is wrong with one item of a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A value outside the field's range.
    OutOfRange {
        /// The field's lowest value.
        low: u32,
        /// The field's highest value.
        high: u32,
    },
    /// Neither a number nor one of the field's names.
    NotANumber {
        /// What the field accepts.
        accepted: &'static str,
    },
    /// An empty item in a list (`1,,2`).
    EmptyItem,
    /// A step of 0.
    ZeroStep,
    /// A step beyond what the parser accepts.
    StepTooLarge {
        /// The largest step accepted.
        high: u32,
    },
    /// A step after a single value (`5/10`): a step needs a range (`*/10`, `5-59/10`).
    StepNeedsRange,
    /// A range from high to low.
    BackwardRange,
    /// `L` or `#` where the dialect does not put them.
    Misplaced,
    /// An occurrence after `#` outside 1-5.
    NthOutOfRange,
}

/// Why a cron expression was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CronError {
    /// Nothing but blanks.
    Empty,
    /// Not five or six fields.
    FieldCount {
        /// How many fields there were.
        found: usize,
        /// The expression.
        text: String,
    },
    /// An `@` word that is not a macro (or `@reboot`, which has no due times).
    UnknownMacro {
        /// The word.
        text: String,
    },
    /// A macro followed by more text.
    MacroWithFields {
        /// The expression.
        text: String,
    },
    /// One field's item is wrong.
    Field {
        /// The field.
        field: Field,
        /// The field's text.
        text: String,
        /// What is wrong with it.
        problem: Problem,
    },
    /// A zone that is not an IANA name this build knows.
    UnknownZone {
        /// The name given.
        text: String,
    },
    /// `CRON_TZ=` in the text names another zone than the one given beside it.
    ZoneConflict {
        /// The zone in the text.
        in_text: String,
        /// The zone given beside it.
        given: String,
    },
}

const MACROS: &str = "@yearly @annually @monthly @weekly @daily @midnight @hourly";

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CronError::Empty => write!(
                f,
                "empty cron expression: expected 5 fields (minute hour day-of-month month \
                 day-of-week), 6 with a leading second field, or a macro ({MACROS})"
            ),
            CronError::FieldCount { found, text } => write!(
                f,
                "`{}` has {found} field{}: expected 5 (minute hour day-of-month month \
                 day-of-week) or 6 with a leading second field",
                shown(text),
                if *found == 1 { "" } else { "s" }
            ),
            CronError::UnknownMacro { text } if text == "@reboot" => write!(
                f,
                "`@reboot` has no due times, so it is not a schedule here; accepted macros: {MACROS}"
            ),
            CronError::UnknownMacro { text } => {
                write!(f, "`{}` is not a known macro; accepted: {MACROS}", shown(text))
            }
            CronError::MacroWithFields { text } => write!(
                f,
                "`{}`: a macro stands alone, with nothing after it but the end of the line",
                shown(text)
            ),
            CronError::Field { field, text, problem } => {
                write!(f, "{field}: `{}` ", shown(text))?;
                match problem {
                    Problem::OutOfRange { low, high } => {
                        write!(f, "is out of range {low}-{high}")
                    }
                    Problem::NotANumber { accepted } => {
                        write!(f, "is not a number or name; accepted: {accepted}")
                    }
                    Problem::EmptyItem => {
                        write!(f, "has an empty item; a list is items separated by single commas")
                    }
                    Problem::ZeroStep => write!(f, "has step 0; a step must be 1 or more"),
                    Problem::StepTooLarge { high } => {
                        write!(f, "has a step out of range 1-{high}")
                    }
                    Problem::StepNeedsRange => write!(
                        f,
                        "steps from a single value; write a range before the step, \
                         such as `*/10` or `5-59/10`"
                    ),
                    Problem::BackwardRange => {
                        write!(f, "runs backwards; a range goes from low to high")
                    }
                    Problem::Misplaced => write!(
                        f,
                        "is not accepted here; `L` (last day) belongs to day-of-month, \
                         `5L` (last Friday) and `5#3` (third Friday) to day-of-week"
                    ),
                    Problem::NthOutOfRange => {
                        write!(f, "asks for an occurrence out of range 1-5 after `#`")
                    }
                }
            }
            CronError::UnknownZone { text } => write!(
                f,
                "unknown time zone `{}`: expected an IANA name such as \
                 `America/New_York`, `Europe/London` or `UTC`",
                shown(text)
            ),
            CronError::ZoneConflict { in_text, given } => write!(
                f,
                "the expression says `CRON_TZ={}` but the schedule's zone is \
                 `{}`; give the zone once",
                shown(in_text),
                shown(given)
            ),
        }
    }
}

impl std::error::Error for CronError {}

/// What the parser hands the compiler: bit sets, the zone named in the text (if any), the
/// normalized text (for display and round trips) and cronie's "fixed-time" flag.
#[derive(Debug, Clone)]
pub(super) struct Parsed {
    pub fields: Fields,
    pub zone: Option<String>,
    pub text: String,
    pub fixed_time: bool,
}

struct Spec {
    field: Field,
    low: u32,
    high: u32,
    names: &'static [&'static str],
    accepted: &'static str,
}

const MONTH_NAMES: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAY_NAMES: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const SECOND: Spec = Spec {
    field: Field::Second,
    low: 0,
    high: 59,
    names: &[],
    accepted: "0-59",
};
const MINUTE: Spec = Spec {
    field: Field::Minute,
    low: 0,
    high: 59,
    names: &[],
    accepted: "0-59",
};
const HOUR: Spec = Spec {
    field: Field::Hour,
    low: 0,
    high: 23,
    names: &[],
    accepted: "0-23",
};
const DAY_OF_MONTH: Spec = Spec {
    field: Field::DayOfMonth,
    low: 1,
    high: 31,
    names: &[],
    accepted: "1-31, `L`, `*` or `?`",
};
const MONTH: Spec = Spec {
    field: Field::Month,
    low: 1,
    high: 12,
    names: &MONTH_NAMES,
    accepted: "1-12 or jan-dec",
};
const DAY_OF_WEEK: Spec = Spec {
    field: Field::DayOfWeek,
    low: 0,
    high: 7,
    names: &DAY_NAMES,
    accepted: "0-7 or sun-sat (0 and 7 are Sunday), `5L`, `5#3`, `*` or `?`",
};

fn expand_macro(name: &str) -> Option<&'static str> {
    Some(match name {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        _ => return None,
    })
}

/// Parses a whole expression, optionally prefixed by `CRON_TZ=Area/City`.
pub(super) fn parse(input: &str) -> Result<Parsed, CronError> {
    let mut tokens: Vec<&str> = input.split_whitespace().collect();
    let mut zone = None;
    if let Some(first) = tokens.first() {
        // `get` rather than slicing: the eighth byte may fall inside a multi-byte character.
        if first
            .get(..8)
            .is_some_and(|p| p.eq_ignore_ascii_case("cron_tz="))
        {
            zone = Some(first[8..].to_string());
            tokens.remove(0);
        }
    }
    let Some(first) = tokens.first() else {
        return Err(CronError::Empty);
    };
    if first.starts_with('@') {
        let name = first.to_ascii_lowercase();
        let Some(expansion) = expand_macro(&name) else {
            return Err(CronError::UnknownMacro { text: name });
        };
        if tokens.len() > 1 {
            return Err(CronError::MacroWithFields {
                text: tokens.join(" "),
            });
        }
        let mut parsed = parse_fields(&expansion.split(' ').collect::<Vec<_>>())?;
        parsed.text = name;
        parsed.zone = zone;
        return Ok(parsed);
    }
    let mut parsed = parse_fields(&tokens)?;
    parsed.zone = zone;
    Ok(parsed)
}

fn parse_fields(tokens: &[&str]) -> Result<Parsed, CronError> {
    let (seconds_text, rest) = match tokens.len() {
        5 => ("0", tokens),
        6 => (tokens[0], &tokens[1..]),
        found => {
            return Err(CronError::FieldCount {
                found,
                text: tokens.join(" "),
            });
        }
    };
    let [minute, hour, dom, month, dow] = [rest[0], rest[1], rest[2], rest[3], rest[4]];
    let mut fields = Fields {
        seconds: parse_field(&SECOND, seconds_text)?.bits,
        minutes: parse_field(&MINUTE, minute)?.bits,
        hours: parse_field(&HOUR, hour)?.bits as u32,
        months: parse_field(&MONTH, month)?.bits as u16,
        ..Fields::default()
    };
    let dom_items = parse_field(&DAY_OF_MONTH, dom)?;
    fields.days = dom_items.bits as u32;
    fields.last_day = dom_items.last;
    fields.dom_star = starts_like_star(dom);
    let dow_items = parse_field(&DAY_OF_WEEK, dow)?;
    // 7 is Sunday, as 0 is.
    fields.weekdays = ((dow_items.bits & 0x7f) | ((dow_items.bits >> 7) & 1)) as u8;
    fields.nth_weekdays = dow_items.nth;
    fields.last_weekdays = dow_items.last_weekdays;
    fields.dow_star = starts_like_star(dow);
    let text = tokens
        .iter()
        .map(|t| t.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(" ");
    Ok(Parsed {
        fields,
        zone: None,
        text,
        fixed_time: !minute.starts_with('*') && !hour.starts_with('*'),
    })
}

/// cronie decides "day-of-month OR day-of-week" by whether the field text begins with `*`
/// (so `*/2` counts as a star); `?` is the Quartz spelling of the same thing.
fn starts_like_star(text: &str) -> bool {
    text.starts_with('*') || text.starts_with('?')
}

#[derive(Default)]
struct Items {
    bits: u64,
    last: bool,
    nth: u64,
    last_weekdays: u8,
}

fn parse_field(spec: &Spec, text: &str) -> Result<Items, CronError> {
    let mut items = Items::default();
    for item in text.split(',') {
        parse_item(spec, item, text, &mut items)?;
    }
    Ok(items)
}

fn parse_item(spec: &Spec, item: &str, whole: &str, out: &mut Items) -> Result<(), CronError> {
    let err = |text: &str, problem| CronError::Field {
        field: spec.field,
        text: text.to_string(),
        problem,
    };
    if item.is_empty() {
        return Err(err(whole, Problem::EmptyItem));
    }
    let lower = item.to_ascii_lowercase();
    let (range, step) = match lower.split_once('/') {
        None => (lower.as_str(), None),
        Some((range, step_text)) => {
            let too_long = !step_text.is_empty() && step_text.bytes().all(|b| b.is_ascii_digit());
            let step = parse_number(step_text).ok_or_else(|| {
                if too_long {
                    // Digits, just too many of them for any step.
                    err(item, Problem::StepTooLarge { high: MAX_STEP })
                } else {
                    err(
                        item,
                        Problem::NotANumber {
                            accepted: "a step such as `/5`",
                        },
                    )
                }
            })?;
            if step == 0 {
                return Err(err(item, Problem::ZeroStep));
            }
            // A step past the field's end (`*/30` in hours) is cronie's and Debian cron's
            // too: it matches the range's first value only (`wide_steps` tells of it).
            (range, Some(step))
        }
    };
    let is_dom = spec.field == Field::DayOfMonth;
    let is_dow = spec.field == Field::DayOfWeek;
    let (low, high) = if range == "*" || (range == "?" && (is_dom || is_dow)) {
        (spec.low, if is_dow { 6 } else { spec.high })
    } else if range == "l" && is_dom && step.is_none() {
        out.last = true;
        return Ok(());
    } else if is_dow && step.is_none() && range.len() > 1 && range.ends_with('l') {
        let day = parse_value(spec, &range[..range.len() - 1], item)? % 7;
        out.last_weekdays |= 1 << day;
        return Ok(());
    } else if is_dow && step.is_none() && range.contains('#') {
        let (day, nth) = range.split_once('#').unwrap_or((range, ""));
        let day = parse_value(spec, day, item)? % 7;
        let nth = parse_number(nth).ok_or_else(|| err(item, Problem::NthOutOfRange))?;
        if !(1..=5).contains(&nth) {
            return Err(err(item, Problem::NthOutOfRange));
        }
        out.nth |= 1 << ((nth - 1) * 7 + day);
        return Ok(());
    } else if range.contains('#') || mentions_l(spec, range) {
        return Err(err(item, Problem::Misplaced));
    } else if let Some((a, b)) = range.split_once('-') {
        let a = parse_value(spec, a, item)?;
        let mut b = parse_value(spec, b, item)?;
        // cronie reads a day-of-week range ending at Sunday written `0` or `sun`
        // (`mon-sun`, `fri-0`) as running through Sunday (7); one that really runs
        // backwards (`thu-tue`) is refused.
        if is_dow && b == 0 && a > 0 {
            b = 7;
        }
        if a > b {
            return Err(err(item, Problem::BackwardRange));
        }
        (a, b)
    } else {
        let v = parse_value(spec, range, item)?;
        if step.is_some() {
            return Err(err(item, Problem::StepNeedsRange));
        }
        (v, v)
    };
    let step = step.unwrap_or(1);
    let mut v = low;
    while v <= high {
        out.bits |= 1 << v;
        v += step;
    }
    Ok(())
}

/// Whether `range` uses `L` as the extension rather than inside a name (`jul` is July).
fn mentions_l(spec: &Spec, range: &str) -> bool {
    let mut rest = range.to_string();
    for name in spec.names {
        rest = rest.replace(name, "");
    }
    rest.contains('l')
}

/// A number or, where the field has them, a three-letter name.
fn parse_value(spec: &Spec, text: &str, item: &str) -> Result<u32, CronError> {
    let err = |problem| CronError::Field {
        field: spec.field,
        text: item.to_string(),
        problem,
    };
    if let Some(v) = parse_number(text) {
        if v < spec.low || v > spec.high {
            return Err(err(Problem::OutOfRange {
                low: spec.low,
                high: spec.high,
            }));
        }
        return Ok(v);
    }
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        // Too many digits for a u32: still a number, just far out of range.
        return Err(err(Problem::OutOfRange {
            low: spec.low,
            high: spec.high,
        }));
    }
    let base = if spec.field == Field::Month { 1 } else { 0 };
    spec.names
        .iter()
        .position(|n| *n == text)
        .map(|i| i as u32 + base)
        .ok_or_else(|| {
            err(Problem::NotANumber {
                accepted: spec.accepted,
            })
        })
}

/// The largest step written (nine digits); longer ones are refused.
const MAX_STEP: u32 = 999_999_999;

/// A step that goes past the end of its range, so the item matches only its first value
/// (`*/30` in the hour field is hour 0 alone): cronie accepts it, and so does this parser,
/// but a person likely meant something else, so `duetime check` and `next` say so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WideStep {
    /// The field it is in.
    pub field: Field,
    /// The item as written (`*/30`).
    pub item: String,
    /// The one value it matches.
    pub matches: u32,
}

impl fmt::Display for WideStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: `{}` steps past the end of its range, so it matches only {} (as in cronie)",
            self.field,
            shown(&self.item),
            self.matches
        )
    }
}

/// The items of an expression whose step goes past their range's end (see `WideStep`);
/// empty for text that does not parse.
pub fn wide_steps(input: &str) -> Vec<WideStep> {
    let Ok(parsed) = parse(input) else {
        return Vec::new();
    };
    let tokens: Vec<&str> = parsed.text.split(' ').collect();
    let (specs, fields): (&[Spec], &[&str]) = match tokens.len() {
        6 => (
            &[SECOND, MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK],
            &tokens,
        ),
        5 => (&[MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK], &tokens),
        _ => return Vec::new(),
    };
    let mut wide = Vec::new();
    for (spec, text) in specs.iter().zip(fields) {
        for item in text.split(',') {
            if let Some(w) = wide_step(spec, item) {
                wide.push(w);
            }
        }
    }
    wide
}

fn wide_step(spec: &Spec, item: &str) -> Option<WideStep> {
    let (range, step) = item.split_once('/')?;
    let step = parse_number(step)?;
    let top = if spec.field == Field::DayOfWeek {
        6
    } else {
        spec.high
    };
    let (low, high) = if range == "*" || range == "?" {
        (spec.low, top)
    } else {
        let (a, b) = range.split_once('-')?;
        let a = parse_value(spec, a, item).ok()?;
        let b = parse_value(spec, b, item).ok()?;
        let b = if spec.field == Field::DayOfWeek && b == 0 && a > 0 {
            7
        } else {
            b
        };
        (a, b)
    };
    (step > 1 && low.saturating_add(step) > high).then(|| WideStep {
        field: spec.field,
        item: item.to_string(),
        matches: low,
    })
}

/// The longest piece of input an error echoes; longer text is cut, so a pasted
/// megabyte does not come back as a megabyte.
const SHOWN_MAX: usize = 80;

/// `text` as an error echoes it: cut to `SHOWN_MAX` characters, then how long it was.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(SHOWN_MAX) {
        None => std::borrow::Cow::Borrowed(text),
        Some((at, _)) => std::borrow::Cow::Owned(format!(
            "{}… ({} characters)",
            &text[..at],
            text.chars().count()
        )),
    }
}

fn parse_number(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > 9 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}
