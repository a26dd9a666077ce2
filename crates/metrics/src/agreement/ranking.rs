//! Agreement between two rankings of the same systems, for asking whether a leaderboard
//! survives a change of labels: Kendall's tau-b (every swapped pair counts the same; ties in
//! either score vector handled as tau-b does) and Yilmaz, Aslam and Robertson's tau_AP (2008),
//! which weighs a swap by how high it happens in the ranking under test, since a swap at the
//! top of a leaderboard matters more than one at the bottom.
//!
//! This is the one place the tau-b coefficient is computed: [`super::kendall_tau_b`] adds
//! scipy's p-value to the same counts.

use std::cmp::Ordering;

/// Pairs of positions `(i, j)`, `i < j`, by how the two score vectors order them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PairCounts {
    /// Ordered alike by both vectors.
    pub(crate) concordant: i64,
    /// Ordered oppositely.
    pub(crate) discordant: i64,
    /// Tied in the first vector only.
    pub(crate) tied_first: i64,
    /// Tied in the second vector only.
    pub(crate) tied_second: i64,
}

impl PairCounts {
    /// Counts every pair of the first `min(a.len(), b.len())` positions. O(n^2): leaderboards
    /// and judge agreement sets are at most a few thousand items.
    pub(crate) fn of(a: &[f64], b: &[f64]) -> Self {
        let n = a.len().min(b.len());
        let mut c = Self::default();
        for i in 0..n {
            for j in (i + 1)..n {
                let da = compare(a[i], a[j]);
                let db = compare(b[i], b[j]);
                match (da, db) {
                    (Ordering::Equal, Ordering::Equal) => {}
                    (Ordering::Equal, _) => c.tied_first += 1,
                    (_, Ordering::Equal) => c.tied_second += 1,
                    _ if da == db => c.concordant += 1,
                    _ => c.discordant += 1,
                }
            }
        }
        c
    }

    /// Concordant minus discordant pairs (Kendall's S).
    pub(crate) fn s(&self) -> i64 {
        self.concordant - self.discordant
    }

    /// tau-b = S / sqrt(pairs untied in a * pairs untied in b); `None` when either vector is
    /// constant (no untied pair).
    pub(crate) fn tau_b(&self) -> Option<f64> {
        let untied_first = (self.concordant + self.discordant + self.tied_second) as f64;
        let untied_second = (self.concordant + self.discordant + self.tied_first) as f64;
        let den = (untied_first * untied_second).sqrt();
        (den > 0.0).then(|| self.s() as f64 / den)
    }
}

/// Numeric order where -0.0 equals 0.0 (a tie, as scipy counts it); NaN, which callers keep
/// out, still gets a fixed place so the counts are deterministic.
fn compare(x: f64, y: f64) -> Ordering {
    x.partial_cmp(&y).unwrap_or_else(|| x.total_cmp(&y))
}

/// Kendall's tau-b between two score vectors over the same systems (`a[i]` and `b[i]` are
/// system `i`'s scores). 1 when every pair is ordered alike, -1 when every pair is reversed;
/// `None` with fewer than two systems or when one vector is constant.
pub fn tau_b(a: &[f64], b: &[f64]) -> Option<f64> {
    PairCounts::of(a, b).tau_b()
}

/// Positions (0 = best) of systems ranked by score descending, ties broken by index: a strict
/// order even when scores tie. `descending_order(s)[0]` is the best system's index.
pub fn descending_order(scores: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&i, &j| scores[j].total_cmp(&scores[i]).then(i.cmp(&j)));
    idx
}

/// tau_AP of the ranking by `list` scores against the reference ranking by `reference`
/// scores: `2/(N-1) * sum_{i=2..N} C(i)/(i-1) - 1`, where `C(i)` is how many of the systems
/// ranked above position `i` by `list` are also above it in the reference. Asymmetric: errors
/// near the top of `list` cost most. Ties are broken by system index in both rankings.
/// `None` with fewer than two systems.
pub fn tau_ap(list: &[f64], reference: &[f64]) -> Option<f64> {
    let n = list.len().min(reference.len());
    if n < 2 {
        return None;
    }
    let l = descending_order(&list[..n]);
    let mut ref_pos = vec![0usize; n];
    for (pos, &sys) in descending_order(&reference[..n]).iter().enumerate() {
        ref_pos[sys] = pos;
    }
    let mut sum = 0.0;
    for i in 1..n {
        let here = ref_pos[l[i]];
        let correct = l[..i].iter().filter(|&&s| ref_pos[s] < here).count();
        sum += correct as f64 / i as f64;
    }
    Some(2.0 / (n - 1) as f64 * sum - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) {
        let a = a.unwrap();
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }

    /// Systems A > B > C > D; hand-computed values.
    #[test]
    fn tau_b_by_hand() {
        let orig = [4.0, 3.0, 2.0, 1.0];
        close(tau_b(&orig, &orig), 1.0);
        close(tau_b(&orig, &[1.0, 2.0, 3.0, 4.0]), -1.0);
        // C and D swap: 5 concordant, 1 discordant of 6 pairs -> 4/6
        close(tau_b(&orig, &[4.0, 3.0, 1.0, 2.0]), 4.0 / 6.0);
        // A and B swap: also 4/6 (tau does not care where the swap is)
        close(tau_b(&orig, &[3.0, 4.0, 2.0, 1.0]), 4.0 / 6.0);
        // tau-b with a tie in b (C = D): C=5, D=0, ties_b=1 -> 5 / sqrt(6 * 5)
        close(tau_b(&orig, &[4.0, 3.0, 1.0, 1.0]), 5.0 / (30f64).sqrt());
        assert_eq!(tau_b(&[1.0], &[1.0]), None);
        assert_eq!(tau_b(&orig, &[1.0; 4]), None);
    }

    #[test]
    fn signed_zeros_tie() {
        let c = PairCounts::of(&[0.0, -0.0, 1.0], &[1.0, 2.0, 3.0]);
        assert_eq!(c.tied_first, 1);
        assert_eq!(c.concordant, 2);
    }

    #[test]
    fn tau_ap_by_hand() {
        let orig = [4.0, 3.0, 2.0, 1.0];
        close(tau_ap(&orig, &orig), 1.0);
        close(tau_ap(&orig, &[1.0, 2.0, 3.0, 4.0]), -1.0);
        // list A B C D, reference A B D C: C(2)=1/1, C(3)=2/2, C(4)=2/3 -> 2/3 * 8/3 - 1 = 7/9
        close(tau_ap(&orig, &[4.0, 3.0, 1.0, 2.0]), 7.0 / 9.0);
        // reference B A C D: C(2)=0/1, C(3)=2/2, C(4)=3/3 -> 2/3 * 2 - 1 = 1/3
        close(tau_ap(&orig, &[3.0, 4.0, 2.0, 1.0]), 1.0 / 3.0);
        assert_eq!(tau_ap(&[1.0], &[1.0]), None);
        // three systems, list A B C, reference C B A: C(2)=0, C(3)=0 -> -1
        close(tau_ap(&[3.0, 2.0, 1.0], &[1.0, 2.0, 3.0]), -1.0);
        // ties broken by index: equal scores rank A before B in both
        close(tau_ap(&[1.0, 1.0, 0.0], &[1.0, 1.0, 0.0]), 1.0);
    }

    #[test]
    fn descending_order_breaks_ties_by_index() {
        assert_eq!(descending_order(&[0.1, 0.5, 0.5, 0.2]), vec![1, 2, 3, 0]);
    }
}
