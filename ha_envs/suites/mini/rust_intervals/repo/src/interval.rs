//! Inclusive integer intervals.

use std::cmp::Ordering;
use std::fmt;

use crate::error::Error;

/// The integers from `start` to `end`, both included. An interval is never
/// empty: `start <= end` always holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Interval {
    start: i64,
    end: i64,
}

impl Interval {
    /// Builds `[start, end]`; fails when `start > end`.
    pub fn new(start: i64, end: i64) -> Result<Interval, Error> {
        if start > end {
            return Err(Error::Reversed { start, end });
        }
        Ok(Interval { start, end })
    }

    /// The interval holding the single value `value`.
    pub fn point(value: i64) -> Interval {
        Interval {
            start: value,
            end: value,
        }
    }

    /// Builds an interval from bounds given in any order.
    pub fn spanning(a: i64, b: i64) -> Interval {
        Interval {
            start: a.min(b),
            end: a.max(b),
        }
    }

    pub fn start(&self) -> i64 {
        self.start
    }

    pub fn end(&self) -> i64 {
        self.end
    }

    /// Number of integers in the interval (at least 1). The full `i64`
    /// range holds 2^64 integers, one more than `u64::MAX`; the count
    /// saturates there.
    pub fn len(&self) -> u64 {
        let n = self.end as i128 - self.start as i128 + 1;
        n.min(u64::MAX as i128) as u64
    }

    /// Always false: intervals are never empty. Present for API symmetry.
    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn contains(&self, value: i64) -> bool {
        self.start <= value && value <= self.end
    }

    /// Whether `other` lies entirely inside this interval.
    pub fn contains_interval(&self, other: &Interval) -> bool {
        self.start <= other.start && other.end <= self.end
    }

    /// Whether the two intervals share at least one integer.
    pub fn overlaps(&self, other: &Interval) -> bool {
        self.start <= other.end && other.start <= self.end
    }

    /// Whether the two intervals do not overlap but no integer lies between
    /// them, e.g. `[1, 3]` and `[4, 6]`.
    pub fn is_adjacent(&self, other: &Interval) -> bool {
        (self.end < other.start && self.end as i128 + 1 == other.start as i128)
            || (other.end < self.start && other.end as i128 + 1 == self.start as i128)
    }

    /// Whether the union of the two intervals is itself an interval.
    pub fn touches(&self, other: &Interval) -> bool {
        self.overlaps(other) || self.is_adjacent(other)
    }

    /// The smallest interval containing both.
    pub fn hull(&self, other: &Interval) -> Interval {
        Interval {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// The integers in both intervals, if any.
    pub fn intersection(&self, other: &Interval) -> Option<Interval> {
        let start = self.start.max(other.start);
        let end = self.end.min(other.end);
        if start <= end {
            Some(Interval { start, end })
        } else {
            None
        }
    }
}

impl PartialOrd for Interval {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Interval {
    /// Ordered by start, then by end.
    fn cmp(&self, other: &Self) -> Ordering {
        (self.start, self.end).cmp(&(other.start, other.end))
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}]", self.start, self.end)
    }
}

impl From<i64> for Interval {
    fn from(value: i64) -> Self {
        Interval::point(value)
    }
}

impl TryFrom<(i64, i64)> for Interval {
    type Error = Error;

    fn try_from((start, end): (i64, i64)) -> Result<Self, Error> {
        Interval::new(start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(a: i64, b: i64) -> Interval {
        Interval::new(a, b).unwrap()
    }

    #[test]
    fn new_rejects_reversed_bounds() {
        assert_eq!(
            Interval::new(5, 1),
            Err(Error::Reversed { start: 5, end: 1 })
        );
        assert!(Interval::new(3, 3).is_ok());
    }

    #[test]
    fn len_counts_both_ends() {
        assert_eq!(iv(1, 3).len(), 3);
        assert_eq!(Interval::point(7).len(), 1);
        assert_eq!(iv(i64::MIN, i64::MAX).len(), u64::MAX);
    }

    #[test]
    fn overlap_and_adjacency() {
        assert!(iv(1, 5).overlaps(&iv(5, 9)));
        assert!(!iv(1, 3).overlaps(&iv(4, 6)));
        assert!(iv(1, 3).is_adjacent(&iv(4, 6)));
        assert!(iv(4, 6).is_adjacent(&iv(1, 3)));
        assert!(!iv(1, 3).is_adjacent(&iv(5, 6)));
        assert!(!iv(1, 5).is_adjacent(&iv(3, 4)));
        assert!(iv(1, 3).touches(&iv(4, 4)));
        assert!(!iv(i64::MAX, i64::MAX).is_adjacent(&iv(i64::MIN, i64::MIN)));
    }

    #[test]
    fn hull_and_intersection() {
        assert_eq!(iv(1, 3).hull(&iv(7, 9)), iv(1, 9));
        assert_eq!(iv(1, 5).intersection(&iv(4, 9)), Some(iv(4, 5)));
        assert_eq!(iv(1, 3).intersection(&iv(4, 9)), None);
        assert!(iv(1, 10).contains_interval(&iv(2, 10)));
        assert!(!iv(1, 10).contains_interval(&iv(0, 3)));
    }

    #[test]
    fn display_and_conversions() {
        assert_eq!(iv(-2, 4).to_string(), "[-2, 4]");
        assert_eq!(Interval::from(3), iv(3, 3));
        assert_eq!(Interval::try_from((1, 2)), Ok(iv(1, 2)));
        assert_eq!(Interval::spanning(9, 2), iv(2, 9));
        assert!(iv(1, 2) < iv(1, 3) && iv(1, 3) < iv(2, 2));
    }
}
