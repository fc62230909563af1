//! Proleptic Gregorian calendar arithmetic on day numbers, so cron search and counting
//! never build chrono values in their inner loops.

/// Seconds in a civil day (cron works in local wall-clock seconds, where every day has 86,400).
pub(crate) const DAY: i64 = 86_400;

/// Days since 1970-01-01 for a civil date (any year; month 1-12, day 1-31).
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(month) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date `(year, month, day)` of a day number.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Day of the week of a day number, 0 = Sunday (1970-01-01 was a Thursday).
pub(crate) fn weekday(days: i64) -> u32 {
    (days + 4).rem_euclid(7) as u32
}

pub(crate) fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

pub(crate) fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_numbers_round_trip_and_agree_with_chrono() {
        for days in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
            let date = chrono::NaiveDate::from_ymd_opt(y as i32, m, d).unwrap();
            let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
            assert_eq!((date - epoch).num_days(), days);
            use chrono::Datelike;
            assert_eq!(date.weekday().num_days_from_sunday(), weekday(days));
            assert_eq!(
                days_in_month(y, m),
                chrono::NaiveDate::from_ymd_opt(y as i32, m, 1)
                    .unwrap()
                    .with_day(days_in_month(y, m))
                    .map(|_| days_in_month(y, m))
                    .unwrap()
            );
        }
        assert!(!is_leap(1900) && is_leap(2000) && is_leap(2024) && !is_leap(2100));
    }
}
