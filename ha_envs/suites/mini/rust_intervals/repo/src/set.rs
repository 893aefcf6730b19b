//! `IntervalSet`: a set of integers stored as sorted, disjoint intervals.

use std::fmt;
use std::iter::FusedIterator;
use std::slice;

use crate::interval::Interval;

/// A set of `i64` values.
///
/// Internally the set is a vector of intervals kept in canonical form:
/// sorted by start, pairwise disjoint and never adjacent (`[1, 3]` and
/// `[4, 6]` are always stored as `[1, 6]`). Equality and hashing compare that
/// representation, which is unique for a given set of integers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct IntervalSet {
    ranges: Vec<Interval>,
}

impl IntervalSet {
    /// The empty set.
    pub fn new() -> IntervalSet {
        IntervalSet { ranges: Vec::new() }
    }

    /// The set holding every integer of `interval`.
    pub fn from_interval(interval: Interval) -> IntervalSet {
        IntervalSet {
            ranges: vec![interval],
        }
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Number of integers in the set (saturates at `u64::MAX`).
    pub fn len(&self) -> u64 {
        self.ranges
            .iter()
            .fold(0u64, |acc, r| acc.saturating_add(r.len()))
    }

    /// Number of intervals the set is made of.
    pub fn interval_count(&self) -> usize {
        self.ranges.len()
    }

    /// The smallest member.
    pub fn min(&self) -> Option<i64> {
        self.ranges.first().map(|r| r.start())
    }

    /// The largest member.
    pub fn max(&self) -> Option<i64> {
        self.ranges.last().map(|r| r.end())
    }

    /// The smallest interval containing every member.
    pub fn span(&self) -> Option<Interval> {
        match (self.ranges.first(), self.ranges.last()) {
            (Some(first), Some(last)) => Some(first.hull(last)),
            _ => None,
        }
    }

    pub fn clear(&mut self) {
        self.ranges.clear();
    }

    /// Index of the first interval that ends at or after `value`.
    fn first_ending_at_or_after(&self, value: i64) -> usize {
        self.ranges.partition_point(|r| r.end() < value)
    }

    /// Adds every integer of `interval`, merging it with the intervals it
    /// overlaps or touches. Returns whether the set changed.
    pub fn insert(&mut self, interval: Interval) -> bool {
        let first = self.first_ending_at_or_after(interval.start());
        let mut last = first;
        let mut merged = interval;
        while last < self.ranges.len() && self.ranges[last].start() <= interval.end() {
            merged = merged.hull(&self.ranges[last]);
            last += 1;
        }
        let unchanged = last == first + 1 && self.ranges[first].contains_interval(&interval);
        if !unchanged {
            self.ranges.splice(first..last, std::iter::once(merged));
        }
        !unchanged
    }

    /// Adds one integer. Returns whether the set changed.
    pub fn insert_value(&mut self, value: i64) -> bool {
        self.insert(Interval::point(value))
    }

    /// Removes every integer of `interval`, splitting the intervals that
    /// stick out on either side. Returns whether the set changed.
    pub fn remove(&mut self, interval: Interval) -> bool {
        let first = self.first_ending_at_or_after(interval.start());
        let mut last = first;
        while last < self.ranges.len() && self.ranges[last].start() <= interval.end() {
            last += 1;
        }
        if first == last {
            return false;
        }
        let head = self.ranges[first];
        let tail = self.ranges[last - 1];
        let mut pieces = Vec::with_capacity(2);
        if head.start() < interval.start() {
            pieces.push(Interval::spanning(head.start(), interval.start() - 1));
        }
        if tail.end() > interval.end() {
            pieces.push(Interval::spanning(interval.end() + 1, tail.end()));
        }
        self.ranges.splice(first..last, pieces);
        true
    }

    /// Removes one integer. Returns whether the set changed.
    pub fn remove_value(&mut self, value: i64) -> bool {
        self.remove(Interval::point(value))
    }

    pub fn contains(&self, value: i64) -> bool {
        let i = self.first_ending_at_or_after(value);
        i < self.ranges.len() && self.ranges[i].start() <= value
    }

    /// Whether every integer of `interval` is in the set.
    pub fn contains_interval(&self, interval: &Interval) -> bool {
        let i = self.first_ending_at_or_after(interval.start());
        i < self.ranges.len() && self.ranges[i].contains_interval(interval)
    }

    /// The interval of the set that holds `value`.
    pub fn interval_containing(&self, value: i64) -> Option<Interval> {
        let i = self.first_ending_at_or_after(value);
        self.ranges.get(i).copied().filter(|r| r.start() <= value)
    }

    /// The intervals of the set, in increasing order.
    pub fn intervals(&self) -> Intervals<'_> {
        Intervals {
            inner: self.ranges.iter(),
        }
    }

    /// Every integer of the set, in increasing order.
    pub fn values(&self) -> Values<'_> {
        Values {
            ranges: self.ranges.iter(),
            current: None,
        }
    }

    /// The integers in either set.
    pub fn union(&self, other: &IntervalSet) -> IntervalSet {
        let mut out = self.clone();
        for r in other.intervals() {
            out.insert(r);
        }
        out
    }

    /// The integers in both sets.
    pub fn intersection(&self, other: &IntervalSet) -> IntervalSet {
        let mut out = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < self.ranges.len() && j < other.ranges.len() {
            let a = self.ranges[i];
            let b = other.ranges[j];
            if let Some(common) = a.intersection(&b) {
                out.push(common);
            }
            if a.end() < b.end() {
                i += 1;
            } else {
                j += 1;
            }
        }
        IntervalSet { ranges: out }
    }

    /// The integers of this set that are not in `other`.
    pub fn difference(&self, other: &IntervalSet) -> IntervalSet {
        let mut out = self.clone();
        for r in other.intervals() {
            out.remove(r);
        }
        out
    }

    /// The integers of `bounds` that are not in the set.
    pub fn complement_within(&self, bounds: Interval) -> IntervalSet {
        IntervalSet::from_interval(bounds).difference(self)
    }

    /// The gaps between consecutive intervals.
    pub fn gaps(&self) -> IntervalSet {
        match self.span() {
            Some(span) => self.complement_within(span),
            None => IntervalSet::new(),
        }
    }
}

impl fmt::Display for IntervalSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", r)?;
        }
        f.write_str("}")
    }
}

impl From<Interval> for IntervalSet {
    fn from(interval: Interval) -> Self {
        IntervalSet::from_interval(interval)
    }
}

impl FromIterator<Interval> for IntervalSet {
    fn from_iter<I: IntoIterator<Item = Interval>>(iter: I) -> Self {
        let mut set = IntervalSet::new();
        set.extend(iter);
        set
    }
}

impl FromIterator<i64> for IntervalSet {
    fn from_iter<I: IntoIterator<Item = i64>>(iter: I) -> Self {
        let mut set = IntervalSet::new();
        set.extend(iter);
        set
    }
}

impl Extend<Interval> for IntervalSet {
    fn extend<I: IntoIterator<Item = Interval>>(&mut self, iter: I) {
        for r in iter {
            self.insert(r);
        }
    }
}

impl Extend<i64> for IntervalSet {
    fn extend<I: IntoIterator<Item = i64>>(&mut self, iter: I) {
        for v in iter {
            self.insert_value(v);
        }
    }
}

impl<'a> IntoIterator for &'a IntervalSet {
    type Item = Interval;
    type IntoIter = Intervals<'a>;

    fn into_iter(self) -> Intervals<'a> {
        self.intervals()
    }
}

/// Iterator over the intervals of a set.
#[derive(Debug, Clone)]
pub struct Intervals<'a> {
    inner: slice::Iter<'a, Interval>,
}

impl<'a> Iterator for Intervals<'a> {
    type Item = Interval;

    fn next(&mut self) -> Option<Interval> {
        self.inner.next().copied()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<'a> DoubleEndedIterator for Intervals<'a> {
    fn next_back(&mut self) -> Option<Interval> {
        self.inner.next_back().copied()
    }
}

impl<'a> ExactSizeIterator for Intervals<'a> {}
impl<'a> FusedIterator for Intervals<'a> {}

/// Iterator over the integers of a set.
#[derive(Debug, Clone)]
pub struct Values<'a> {
    ranges: slice::Iter<'a, Interval>,
    /// Next value to yield and the end of its interval.
    current: Option<(i64, i64)>,
}

impl<'a> Iterator for Values<'a> {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        loop {
            if let Some((next, end)) = self.current {
                self.current = if next == end {
                    None
                } else {
                    Some((next + 1, end))
                };
                return Some(next);
            }
            let r = self.ranges.next()?;
            self.current = Some((r.start(), r.end()));
        }
    }
}

impl<'a> FusedIterator for Values<'a> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(a: i64, b: i64) -> Interval {
        Interval::new(a, b).unwrap()
    }

    fn ranges(set: &IntervalSet) -> Vec<(i64, i64)> {
        set.intervals().map(|r| (r.start(), r.end())).collect()
    }

    #[test]
    fn empty_set() {
        let set = IntervalSet::new();
        assert!(set.is_empty());
        assert_eq!(set.len(), 0);
        assert_eq!(set.min(), None);
        assert_eq!(set.span(), None);
        assert_eq!(set.to_string(), "{}");
        assert!(!set.contains(0));
    }

    #[test]
    fn insert_keeps_intervals_sorted() {
        let mut set = IntervalSet::new();
        assert!(set.insert(iv(10, 12)));
        assert!(set.insert(iv(1, 3)));
        assert!(set.insert(iv(6, 7)));
        assert_eq!(ranges(&set), vec![(1, 3), (6, 7), (10, 12)]);
        assert_eq!(set.len(), 8);
    }

    #[test]
    fn insert_merges_overlapping() {
        let mut set = IntervalSet::new();
        set.insert(iv(1, 5));
        set.insert(iv(3, 8));
        assert_eq!(ranges(&set), vec![(1, 8)]);
        set.insert(iv(20, 30));
        set.insert(iv(0, 25));
        assert_eq!(ranges(&set), vec![(0, 30)]);
    }

    #[test]
    fn insert_spanning_several_intervals() {
        let mut set: IntervalSet = vec![iv(1, 2), iv(5, 6), iv(9, 10), iv(20, 21)]
            .into_iter()
            .collect();
        assert!(set.insert(iv(2, 9)));
        assert_eq!(ranges(&set), vec![(1, 10), (20, 21)]);
    }

    #[test]
    fn insert_reports_no_change_for_members() {
        let mut set = IntervalSet::from(iv(1, 10));
        assert!(!set.insert(iv(2, 9)));
        assert!(!set.insert_value(10));
        assert!(set.insert(iv(8, 12)));
    }

    #[test]
    fn remove_splits_an_interval() {
        let mut set = IntervalSet::from(iv(1, 10));
        assert!(set.remove(iv(4, 6)));
        assert_eq!(ranges(&set), vec![(1, 3), (7, 10)]);
        assert_eq!(set.len(), 7);
        assert!(!set.contains(4) && !set.contains(6));
        assert!(set.contains(3) && set.contains(7));
    }

    #[test]
    fn remove_trims_ends_and_drops_covered() {
        let mut set: IntervalSet = vec![iv(1, 5), iv(8, 9), iv(12, 20)].into_iter().collect();
        assert!(set.remove(iv(4, 14)));
        assert_eq!(ranges(&set), vec![(1, 3), (15, 20)]);
        assert!(!set.remove(iv(6, 11)));
        assert!(set.remove_value(1));
        assert_eq!(ranges(&set), vec![(2, 3), (15, 20)]);
    }

    #[test]
    fn contains_uses_inclusive_bounds() {
        let set: IntervalSet = vec![iv(-5, -1), iv(10, 10)].into_iter().collect();
        for v in [-5, -3, -1, 10] {
            assert!(set.contains(v), "{}", v);
        }
        for v in [-6, 0, 9, 11] {
            assert!(!set.contains(v), "{}", v);
        }
        assert!(set.contains_interval(&iv(-4, -2)));
        assert!(!set.contains_interval(&iv(-1, 10)));
        assert_eq!(set.interval_containing(-2), Some(iv(-5, -1)));
        assert_eq!(set.interval_containing(5), None);
    }

    #[test]
    fn values_iterates_every_member() {
        let set: IntervalSet = vec![iv(1, 3), iv(7, 8)].into_iter().collect();
        assert_eq!(set.values().collect::<Vec<_>>(), vec![1, 2, 3, 7, 8]);
        let edge = IntervalSet::from(iv(i64::MAX - 1, i64::MAX));
        assert_eq!(
            edge.values().collect::<Vec<_>>(),
            vec![i64::MAX - 1, i64::MAX]
        );
    }

    #[test]
    fn display_lists_intervals() {
        let set: IntervalSet = vec![iv(5, 6), iv(-3, 1)].into_iter().collect();
        assert_eq!(set.to_string(), "{[-3, 1], [5, 6]}");
    }

    #[test]
    fn extreme_bounds_do_not_overflow() {
        let mut set = IntervalSet::from(iv(i64::MIN, i64::MAX));
        assert_eq!(set.len(), u64::MAX);
        assert!(set.remove(iv(i64::MIN, i64::MIN)));
        assert_eq!(set.min(), Some(i64::MIN + 1));
        assert!(set.remove_value(i64::MAX));
        assert_eq!(set.max(), Some(i64::MAX - 1));
        assert!(set.contains(0));
    }
}
