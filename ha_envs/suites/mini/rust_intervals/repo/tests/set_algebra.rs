use intset::{Interval, IntervalSet};

fn iv(a: i64, b: i64) -> Interval {
    Interval::new(a, b).unwrap()
}

fn set(items: &[(i64, i64)]) -> IntervalSet {
    items.iter().map(|&(a, b)| iv(a, b)).collect()
}

#[test]
fn union_of_disjoint_sets() {
    let u = set(&[(1, 3)]).union(&set(&[(10, 12), (-4, -2)]));
    assert_eq!(u.to_string(), "{[-4, -2], [1, 3], [10, 12]}");
    assert_eq!(u.len(), 9);
}

#[test]
fn union_of_overlapping_sets() {
    let u = set(&[(1, 5), (10, 15)]).union(&set(&[(4, 11), (20, 22)]));
    assert_eq!(u, set(&[(1, 15), (20, 22)]));
}

#[test]
fn intersection_of_sets() {
    let a = set(&[(1, 10), (20, 30)]);
    let b = set(&[(5, 25), (28, 40)]);
    assert_eq!(
        a.intersection(&b).to_string(),
        "{[5, 10], [20, 25], [28, 30]}"
    );
    assert!(a.intersection(&set(&[(11, 19)])).is_empty());
}

#[test]
fn difference_of_sets() {
    let a = set(&[(1, 20)]);
    let d = a.difference(&set(&[(3, 4), (10, 12), (19, 25)]));
    assert_eq!(d.to_string(), "{[1, 2], [5, 9], [13, 18]}");
    assert_eq!(d.len(), 2 + 5 + 6);
}

#[test]
fn complement_and_gaps() {
    let s = set(&[(3, 5), (8, 8)]);
    assert_eq!(
        s.complement_within(iv(0, 10)).to_string(),
        "{[0, 2], [6, 7], [9, 10]}"
    );
    assert_eq!(s.gaps().to_string(), "{[6, 7]}");
    assert!(IntervalSet::new().gaps().is_empty());
}

#[test]
fn intervals_iterate_in_both_directions() {
    let s = set(&[(7, 9), (1, 2), (4, 4)]);
    let forward: Vec<String> = s.intervals().map(|r| r.to_string()).collect();
    assert_eq!(forward, ["[1, 2]", "[4, 4]", "[7, 9]"]);
    let backward: Vec<i64> = s.intervals().rev().map(|r| r.start()).collect();
    assert_eq!(backward, [7, 4, 1]);
    assert_eq!(s.intervals().len(), 3);
    let mut count = 0;
    for r in &s {
        count += r.len();
    }
    assert_eq!(count, s.len());
}

#[test]
fn sets_built_differently_compare_equal() {
    let a = set(&[(1, 4), (3, 8), (20, 25)]);
    let mut b = IntervalSet::from(iv(1, 30));
    b.remove(iv(9, 19));
    b.remove(iv(26, 30));
    assert_eq!(a, b);
    assert_eq!(a.span(), Some(iv(1, 25)));
}

#[test]
fn collecting_scattered_values() {
    let s: IntervalSet = vec![10, 1, 5, 5, -3].into_iter().collect();
    assert_eq!(s.to_string(), "{[-3, -3], [1, 1], [5, 5], [10, 10]}");
    assert_eq!(s.values().collect::<Vec<_>>(), vec![-3, 1, 5, 10]);
    let mut t = s.clone();
    t.extend(vec![iv(7, 8)]);
    assert_eq!(t.interval_count(), 5);
}
