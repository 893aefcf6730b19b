//! Parsing intervals and sets from text.
//!
//! Accepted interval forms: `5`, `1-3`, `-5--2` (negative bounds), `1..=3`
//! and `[1, 3]`. A set is a comma-separated list of intervals, optionally in
//! braces: `1-3, 7, 9-12` or `{[1, 3], [7, 7]}` (the `Display` form).

use std::num::IntErrorKind;
use std::str::FromStr;

use crate::error::Error;
use crate::interval::Interval;
use crate::set::IntervalSet;

fn parse_number(text: &str) -> Result<i64, Error> {
    let text = text.trim();
    text.parse::<i64>().map_err(|e| match e.kind() {
        IntErrorKind::PosOverflow | IntErrorKind::NegOverflow => {
            Error::OutOfRange(text.to_string())
        }
        _ => Error::Syntax(text.to_string()),
    })
}

/// Splits `a-b` at the dash between the two numbers. The first number may
/// carry a sign, so the search starts after it; the second number may be
/// negative too (`-5--2`).
fn split_range(text: &str) -> Option<(&str, &str)> {
    let trimmed = text.trim_start();
    let offset = text.len() - trimmed.len();
    let bytes = trimmed.as_bytes();
    let mut i = 0;
    if i < bytes.len() && (bytes[i] == b'-' || bytes[i] == b'+') {
        i += 1;
    }
    while i < bytes.len() {
        if bytes[i] == b'-' {
            return Some((&text[..offset + i], &text[offset + i + 1..]));
        }
        i += 1;
    }
    None
}

impl FromStr for Interval {
    type Err = Error;

    fn from_str(s: &str) -> Result<Interval, Error> {
        let text = s.trim();
        if text.is_empty() {
            return Err(Error::Syntax(s.to_string()));
        }
        if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            let mut parts = inner.split(',');
            let (a, b) = match (parts.next(), parts.next(), parts.next()) {
                (Some(a), Some(b), None) => (a, b),
                _ => return Err(Error::Syntax(s.to_string())),
            };
            return Interval::new(parse_number(a)?, parse_number(b)?);
        }
        if let Some((a, b)) = text.split_once("..=") {
            return Interval::new(parse_number(a)?, parse_number(b)?);
        }
        match split_range(text) {
            Some((a, b)) => Interval::new(parse_number(a)?, parse_number(b)?),
            None => parse_number(text).map(Interval::point),
        }
    }
}

/// Splits the items of a bracketed list `[1, 3], [5, 6]`.
fn bracket_items(text: &str) -> Result<Vec<&str>, Error> {
    let mut items = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        if !rest.starts_with('[') {
            return Err(Error::Syntax(rest.to_string()));
        }
        let close = rest
            .find(']')
            .ok_or_else(|| Error::Syntax(rest.to_string()))?;
        items.push(&rest[..=close]);
        rest = rest[close + 1..].trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            rest = after.trim_start();
            if rest.is_empty() {
                return Err(Error::Syntax(text.to_string()));
            }
        } else if !rest.is_empty() {
            return Err(Error::Syntax(rest.to_string()));
        }
    }
    Ok(items)
}

impl FromStr for IntervalSet {
    type Err = Error;

    fn from_str(s: &str) -> Result<IntervalSet, Error> {
        let mut text = s.trim();
        if let Some(inner) = text.strip_prefix('{') {
            text = inner
                .strip_suffix('}')
                .ok_or_else(|| Error::Syntax(s.to_string()))?
                .trim();
        }
        let mut set = IntervalSet::new();
        if text.is_empty() {
            return Ok(set);
        }
        let items: Vec<&str> = if text.starts_with('[') {
            bracket_items(text)?
        } else {
            text.split(',').collect()
        };
        for item in items {
            set.insert(item.parse::<Interval>()?);
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(a: i64, b: i64) -> Interval {
        Interval::new(a, b).unwrap()
    }

    #[test]
    fn parses_interval_forms() {
        assert_eq!("7".parse::<Interval>(), Ok(iv(7, 7)));
        assert_eq!("1-3".parse::<Interval>(), Ok(iv(1, 3)));
        assert_eq!(" 2 - 9 ".parse::<Interval>(), Ok(iv(2, 9)));
        assert_eq!("-5--2".parse::<Interval>(), Ok(iv(-5, -2)));
        assert_eq!("-5-2".parse::<Interval>(), Ok(iv(-5, 2)));
        assert_eq!("-4".parse::<Interval>(), Ok(iv(-4, -4)));
        assert_eq!("1..=4".parse::<Interval>(), Ok(iv(1, 4)));
        assert_eq!("[-1, 6]".parse::<Interval>(), Ok(iv(-1, 6)));
    }

    #[test]
    fn rejects_bad_intervals() {
        assert!(matches!("".parse::<Interval>(), Err(Error::Syntax(_))));
        assert!(matches!("a-b".parse::<Interval>(), Err(Error::Syntax(_))));
        assert!(matches!(
            "[1, 2, 3]".parse::<Interval>(),
            Err(Error::Syntax(_))
        ));
        assert_eq!(
            "5-1".parse::<Interval>(),
            Err(Error::Reversed { start: 5, end: 1 })
        );
        assert!(matches!(
            "99999999999999999999".parse::<Interval>(),
            Err(Error::OutOfRange(_))
        ));
    }

    #[test]
    fn parses_set_lists() {
        let set: IntervalSet = "1-3, 7, 10-12".parse().unwrap();
        assert_eq!(set.to_string(), "{[1, 3], [7, 7], [10, 12]}");
        let set: IntervalSet = "{}".parse().unwrap();
        assert!(set.is_empty());
        assert!("1-3,,4".parse::<IntervalSet>().is_err());
        assert!("{1-3".parse::<IntervalSet>().is_err());
    }

    #[test]
    fn display_form_round_trips() {
        let set: IntervalSet = "{[-10, -8], [0, 0], [5, 9]}".parse().unwrap();
        assert_eq!(set.to_string(), "{[-10, -8], [0, 0], [5, 9]}");
        let again: IntervalSet = set.to_string().parse().unwrap();
        assert_eq!(again, set);
        assert!("{[1, 2] [3, 4]}".parse::<IntervalSet>().is_err());
    }
}
