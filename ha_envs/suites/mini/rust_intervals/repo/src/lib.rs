//! Sets of integers stored as sorted, disjoint, inclusive intervals.
//!
//! The main type is [`IntervalSet`]; its members are `i64` values grouped in
//! [`Interval`]s with inclusive bounds. A set always keeps its canonical form:
//! the intervals are sorted by their start, do not overlap and are not
//! adjacent, so each set of integers has exactly one representation.

pub mod error;
pub mod interval;
pub mod parse;
pub mod set;

pub use error::Error;
pub use interval::Interval;
pub use set::{IntervalSet, Intervals, Values};
