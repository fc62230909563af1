//! Suggestions for what a person probably meant: a misspelt zone (`America/New_Yrok`), a
//! misspelt day or month name in cron text (`mon-fir`), a misspelt key of the jobs file.
//! Distances count a swap of two neighbouring letters as one edit, the commonest typo.

use duetime::{CronError, Field, Problem};

const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// Edits (insert, delete, replace, swap of neighbours) from `a` to `b`, for short words;
/// `a` is cut at 64 characters so a pasted megabyte costs nothing.
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(64).collect();
    let b: Vec<char> = b.chars().take(64).collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// The candidate nearest to `word` within `max` edits (ignoring case), if one is.
pub fn nearest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Option<&'a str> {
    let word = word.to_ascii_lowercase();
    // The distance is at least the difference in length (of the 64 characters compared),
    // so a candidate that differs by more is passed over without its table: a misspelt
    // zone is weighed against some 600 names, most of them far longer or shorter.
    let len = |s: &str| s.chars().take(64).count();
    let word_len = len(&word);
    candidates
        .into_iter()
        .filter(|c| len(c).abs_diff(word_len) <= max)
        .map(|c| (distance(&word, &c.to_ascii_lowercase()), c))
        .filter(|(d, _)| *d <= max)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The IANA zone a misspelt name most likely means.
pub fn zone(text: &str) -> Option<&'static str> {
    if text.len() > 64 {
        return None;
    }
    nearest(text, chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name()), 3)
}

/// A cron item with its misspelt names put right (`mon-fir` to `mon-fri`).
fn item(text: &str, names: &[&'static str]) -> Option<String> {
    let mut fixed = String::new();
    let mut changed = false;
    let mut word = String::new();
    let mut flush = |word: &mut String, fixed: &mut String| {
        let w = std::mem::take(word);
        let known = names.contains(&w.to_ascii_lowercase().as_str());
        match nearest(&w, names.iter().copied(), 2).filter(|_| !known && !w.is_empty()) {
            Some(n) => {
                fixed.push_str(n);
                changed = true;
            }
            None => fixed.push_str(&w.to_ascii_lowercase()),
        }
    };
    for c in text.chars() {
        if c.is_ascii_alphabetic() {
            word.push(c);
        } else {
            flush(&mut word, &mut fixed);
            fixed.push(c.to_ascii_lowercase());
        }
    }
    flush(&mut word, &mut fixed);
    changed.then_some(fixed)
}

/// What the text of a refused cron expression or zone probably meant.
pub fn cron(e: &CronError) -> Option<String> {
    match e {
        CronError::UnknownZone { text } => zone(text).map(str::to_string),
        CronError::Field {
            field,
            text,
            problem: Problem::NotANumber { .. },
        } if text.len() <= 64 => match field {
            Field::DayOfWeek => item(text, &DAYS),
            Field::Month => item(text, &MONTHS),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duetime::Schedule;

    fn hint(expr: &str, tz: Option<&str>) -> Option<String> {
        match Schedule::cron(expr, tz) {
            Err(duetime::ScheduleError::Cron(e)) => cron(&e),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn misspelt_zones_and_names_get_a_suggestion() {
        assert_eq!(
            hint("0 9 * * *", Some("America/New_Yrok")).as_deref(),
            Some("America/New_York")
        );
        assert_eq!(hint("0 9 * * mon-fir", None).as_deref(), Some("mon-fri"));
        assert_eq!(hint("0 9 * * MON-FRY", None).as_deref(), Some("mon-fri"));
        assert_eq!(hint("0 9 * jna *", None).as_deref(), Some("jan"));
        assert_eq!(hint("0 9 * * funday", None), None);
        assert_eq!(hint("0 9 * * *", Some("Mars/Olympus_Mons")), None);
    }
}
