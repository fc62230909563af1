//! `duetime next 'EXPR'`: the next due times of a cron expression, like
//! `systemd-analyze calendar`, with a note on each one a daylight-saving rule moved, so a
//! person can see what the schedule will do before putting it in a jobs file.

use std::io::{self, Write};

use duetime::CronSchedule;
use duetime::{DstPolicy, Timestamp};

use super::due::{self, Due};
use crate::cmd::parse_instant;
use clap::builder::PossibleValuesParser;
use duetime::{Fold, Gap, Roll};
use duetime_host::jobs_file::{all_names, from_name, name_of, Rule};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A cron expression in quotes: "30 2 * * *", "@daily", "0 9 * * mon-fri",
    /// "CRON_TZ=Europe/London 0 9 * * *"
    pub expr: String,
    /// The IANA zone the expression is read in (default: its CRON_TZ=, else UTC)
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    /// How many due times to show
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub count: u32,
    /// Show due times after this RFC 3339 instant instead of now
    #[arg(long, value_name = "TIME", value_parser = parse_instant)]
    pub from: Option<Timestamp>,
    /// Daylight-saving rule for local times that do not exist (default: cron's)
    #[arg(long, value_parser = PossibleValuesParser::new(all_names::<Gap>()))]
    pub gap: Option<String>,
    /// Daylight-saving rule for local times that happen twice (default: cron's)
    #[arg(long, value_parser = PossibleValuesParser::new(all_names::<Fold>()))]
    pub fold: Option<String>,
    /// Leave out a local date or range, as a calendar's: 2025-12-25,
    /// 2025-12-24..2025-12-26, 2025-12-24T12:00..2025-12-27 (again for more)
    #[arg(long, value_name = "DATES")]
    pub exclude: Vec<String>,
    /// Only the month's N-th business day (-1: the last), Monday to Friday and not
    /// excluded whole
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub business_day: Option<i64>,
    /// What becomes of an excluded due time: none (the default), next, previous
    #[arg(long, value_parser = PossibleValuesParser::new(all_names::<Roll>()))]
    pub roll: Option<String>,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let cron = match CronSchedule::parse(&args.expr, args.tz.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            let text = match duetime_host::hints::cron(&e) {
                Some(hint) => format!("{e} (did you mean `{hint}`?)"),
                None => e.to_string(),
            };
            if args.json {
                let mut v = super::json::error(super::json::ErrorKind::InvalidExpression, &text);
                v["expression"] = super::cut(&args.expr).into();
                writeln!(out, "{v:#}")?;
            } else {
                writeln!(err, "duetime next: {text}")?;
            }
            return Ok(1);
        }
    };
    let cron = match (args.gap.as_deref(), args.fold.as_deref()) {
        (None, None) => cron,
        (gap, fold) => {
            let default = cron.policy();
            let policy = DstPolicy {
                gap: pick(gap, default.gap),
                fold: pick(fold, default.fold),
            };
            cron.with_dst(Some(policy))
        }
    };
    let from = args.from.unwrap_or_else(super::now);
    let schedule = match with_calendar(duetime::Schedule::Cron(cron.clone()), args) {
        Ok(s) => s,
        Err(e) => {
            if args.json {
                let v = super::json::error(super::json::ErrorKind::InvalidExpression, &e);
                writeln!(out, "{v:#}")?;
            } else {
                writeln!(err, "duetime next: {e}")?;
            }
            return Ok(1);
        }
    };
    let dues = due::upcoming(&schedule, from, args.count as usize);
    if args.json {
        let policy = cron.policy();
        let v = serde_json::json!({
            "ok": true,
            "expression": as_written(&args.expr),
            "zone": cron.zone().name(),
            "fixed_time": cron.is_fixed_time(),
            "dst": {
                "gap": name_of(&policy.gap),
                "fold": name_of(&policy.fold),
                "explicit": cron.explicit_policy().is_some(),
            },
            "from": from.to_string(),
            "due": dues.iter().map(due::to_json).collect::<Vec<_>>(),
            "warnings": duetime::wide_steps(cron.expr()).iter().map(ToString::to_string).collect::<Vec<_>>(),
        });
        writeln!(out, "{v:#}")?;
    } else {
        write!(out, "{}", text(&cron, &args.expr, from, &dues, &schedule))?;
    }
    Ok(0)
}

/// `base` with the dates `--exclude` names left out (a calendar called `dates`), the
/// `--business-day` rule and the `--roll`, as a jobs file's `exclude`, `business_day` and
/// `roll` make it; `base` itself when none is given. The error says which date is wrong.
fn with_calendar(base: duetime::Schedule, args: &Args) -> Result<duetime::Schedule, String> {
    if args.exclude.is_empty() && args.business_day.is_none() && args.roll.is_none() {
        return Ok(base);
    }
    let spans = args
        .exclude
        .iter()
        .map(|t| duetime::Span::parse(t, None).map_err(|e| format!("--exclude: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let name = duetime::CalendarName::new("dates").map_err(|e| e.to_string())?;
    let calendar = duetime::Calendar::new(name, false, spans).map_err(|e| e.to_string())?;
    let exclude = if args.exclude.is_empty() {
        Vec::new()
    } else {
        vec![calendar]
    };
    let business_day = args
        .business_day
        .map(duetime::BusinessDay::new)
        .transpose()
        .map_err(|e| format!("--business-day: {e}"))?;
    let roll = pick(args.roll.as_deref(), Roll::Stay);
    duetime::Schedule::calendar(base, exclude, business_day, roll).map_err(|e| e.to_string())
}

/// The rule named `name` (clap has already checked it is one), else `default`.
fn pick<T: Rule>(name: Option<&str>, default: T) -> T {
    name.and_then(from_name).unwrap_or(default)
}

/// The expression as the person typed it, spaces evened and any `CRON_TZ=` (printed as
/// the zone) left out: the core keeps it lower-cased (`0 0 l * *` for `0 0 L * *`), which
/// reads as a different expression.
fn as_written(expr: &str) -> String {
    super::cut(&written(expr))
}

/// `as_written` uncut: for a jobs file's expression, which the core has already bounded.
pub fn written(expr: &str) -> String {
    let mut tokens: Vec<&str> = expr.split_whitespace().collect();
    let prefixed = tokens
        .first()
        .and_then(|t| t.get(..8))
        .is_some_and(|p| p.eq_ignore_ascii_case("cron_tz="));
    if prefixed {
        tokens.remove(0);
    }
    tokens.join(" ")
}

fn text(
    cron: &CronSchedule,
    written: &str,
    from: Timestamp,
    dues: &[Due],
    schedule: &duetime::Schedule,
) -> String {
    let mut s = String::new();
    s.push_str(&format!("expression  {}\n", as_written(written)));
    s.push_str(&format!("zone        {}\n", cron.zone().name()));
    s.push_str(&format!(
        "dst         {}\n",
        due::policy_text(cron, "set with --gap/--fold")
    ));
    for w in duetime::wide_steps(cron.expr()) {
        s.push_str(&format!("note        {w}\n"));
    }
    if let duetime::Schedule::Calendar(c) = schedule {
        let spans: Vec<String> = c
            .exclude()
            .iter()
            .flat_map(|cal| cal.spans().iter().map(ToString::to_string))
            .collect();
        if !spans.is_empty() {
            s.push_str(&format!("excluding   {}\n", spans.join(", ")));
        }
        if let Some(n) = c.business_day() {
            s.push_str(&format!("business    day {} of each month\n", n.get()));
        }
        s.push_str(&format!("roll        {}\n", c.roll().name()));
    }
    s.push_str(&format!("after       {from}\n\n"));
    if dues.is_empty() {
        s.push_str("no due times after that\n");
    } else {
        due::write_table(&mut s, dues, "", true);
    }
    s
}
