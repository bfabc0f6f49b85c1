//! `YYYYMMDDhhmmss` timestamps: the reflog's (in a configured UTC offset) and the queue
//! files' (UTC). Parsed by hand: the master reads one per reflog line.

/// Seconds since the Unix epoch for a 14-digit `YYYYMMDDhhmmss` in a zone `offset` seconds
/// east of UTC; `None` unless it is 14 digits naming a real moment.
pub fn parse(text: &[u8], offset: i64) -> Option<i64> {
    if text.len() != 14 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = |a: usize, b: usize| {
        text[a..b]
            .iter()
            .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'))
    };
    let (y, mo, d, h, mi, s) = (n(0, 4), n(4, 6), n(6, 8), n(8, 10), n(10, 12), n(12, 14));
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset)
}

/// `YYYYMMDDhhmmss` of `secs` since the epoch, in UTC.
pub fn format(secs: i64) -> String {
    String::from_utf8_lossy(&digits(secs)).into_owned()
}

/// The 14 digits of [`format`], without allocating (queue files write one per record).
pub fn digits(secs: i64) -> [u8; 14] {
    let days = secs.div_euclid(86400);
    let rest = secs.rem_euclid(86400);
    let (y, m, d) = civil_from_days(days);
    let mut out = [b'0'; 14];
    let mut put = |at: usize, width: usize, mut v: i64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + v.rem_euclid(10) as u8;
            v /= 10;
        }
    };
    put(0, 4, y);
    put(4, 2, m);
    put(6, 2, d);
    put(8, 2, rest / 3600);
    put(10, 2, rest / 60 % 60);
    put(12, 2, rest % 60);
    out
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// Year, month, day of a day count since 1970-01-01 (H. Hinnant's algorithm); plain integer
/// arithmetic, so a signal handler may call it too.
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_checks() {
        assert_eq!(parse(b"19700101000000", 0), Some(0));
        assert_eq!(parse(b"20110727200841", 0), Some(1311797321));
        assert_eq!(parse(b"20110727200841", 3 * 3600), Some(1311797321 - 10800));
        assert_eq!(format(1311797321), "20110727200841");
        assert_eq!(
            parse(b"20240229235959", 0).map(format),
            Some("20240229235959".into())
        );
        for bad in [
            &b"20230229000000"[..],
            b"20111327200841",
            b"2011072720084",
            b"2011072720084x",
            b"20110727240000",
            b"-0110727200841",
        ] {
            assert_eq!(parse(bad, 0), None, "{}", String::from_utf8_lossy(bad));
        }
        for secs in [-86400 * 365, 0, 951782400, 4102444799] {
            assert_eq!(parse(format(secs).as_bytes(), 0), Some(secs));
        }
    }
}
