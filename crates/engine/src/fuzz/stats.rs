//! The numbers a campaign (and `test --repeat`) reports: the pass rate's
//! 95% Wilson score interval, pass^k (the chance that k runs of the same
//! seed all pass) and pass@k (the chance that at least one of k does).

use std::collections::BTreeMap;

/// z for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval `(low, high)` for `passes` out of `n` at
/// normal quantile `z`. With no runs it is the whole of [0, 1].
pub fn wilson(passes: u64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let n = n as f64;
    let p = passes as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    // At a rate of 0 or 1 the bound is that rate, not a float's step
    // from it (`0.9999999999999999` at 25 of 25).
    let lo = if p == 0.0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if p == 1.0 {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    (lo, hi)
}

/// The k a curve over `n` runs is reported at: every k up to 16, then
/// the powers of two below `n`, then `n` itself. A thousand repeats give
/// 23 figures, not a thousand, and the per-case counts (`passes`, `runs`,
/// a campaign's `seeds_by_passes`) give any other k.
pub fn reported_ks(n: u64) -> Vec<u64> {
    let mut ks: Vec<u64> = (1..=n.min(16)).collect();
    let mut k = 32;
    while k < n {
        ks.push(k);
        k *= 2;
    }
    if n > 16 {
        ks.push(n);
    }
    ks
}

/// More figures than [`reported_ks`] lists for any run count (every k to
/// 16, the powers of two, n).
const REPORTED_AT_MOST: u64 = 80;

/// C(a, k) / C(n, k) at each k of `ks` (ascending), a k of 0 or past `n`
/// (or an `a` past `n`) NaN. Each is a product of factors at most 1, so
/// nothing overflows however many the runs (C(2000, 1000) as a float is
/// infinite, and the ratio of two of them not a number), taken the
/// shorter of two ways: over k, (a − i) / (n − i) for i < k, one running
/// product for every k, which reaches 0 (and stops) after ~745 / ln(n / a)
/// factors; or over d = n − a, (n − k − j) / (n − j) for j < d, for each
/// k, which is short when nearly every run counts. Which way depends on
/// `a` and `n` only, so a k gives the same figure in any list.
fn ratios(a: u64, n: u64, ks: &[u64]) -> Vec<f64> {
    let valid = |k: u64| k != 0 && k <= n && a <= n;
    let d = n.saturating_sub(a);
    // Factors over k until the product is 0 (a float below ~1e-308).
    let over_k = if a == 0 {
        1
    } else if a >= n {
        n
    } else {
        let per = -(a as f64 / n as f64).ln();
        ((745.0 / per).ceil() as u64).min(n)
    };
    if d.saturating_mul(REPORTED_AT_MOST) < over_k {
        return ks
            .iter()
            .map(|&k| {
                if !valid(k) {
                    return f64::NAN;
                }
                let mut product = 1.0;
                for j in 0..d {
                    if product == 0.0 {
                        break;
                    }
                    product *= (n - k).saturating_sub(j) as f64 / (n - j) as f64;
                }
                product
            })
            .collect();
    }
    let mut product = 1.0;
    let mut i = 0;
    ks.iter()
        .map(|&k| {
            if !valid(k) {
                return f64::NAN;
            }
            while i < k && product > 0.0 {
                product *= if i < a {
                    (a - i) as f64 / (n - i) as f64
                } else {
                    0.0
                };
                i += 1;
            }
            product
        })
        .collect()
}

/// pass^k over seeds that each ran `n` times: the mean over seeds of
/// C(c, k) / C(n, k), where c is how many of that seed's runs passed — the
/// unbiased estimate of "k fresh runs of a seed all pass".
pub fn pass_hat_k(passes_per_seed: &[u64], n: u64, k: u64) -> f64 {
    pass_hat_ks(passes_per_seed, n, &[k])[0]
}

/// [`pass_hat_k`] at each k of `ks` (ascending).
pub fn pass_hat_ks(passes_per_seed: &[u64], n: u64, ks: &[u64]) -> Vec<f64> {
    let mut seeds_by_passes: BTreeMap<u64, u64> = BTreeMap::new();
    for &c in passes_per_seed.iter().filter(|&&c| c <= n) {
        *seeds_by_passes.entry(c).or_default() += 1;
    }
    of_counts(seeds_by_passes.into_iter(), n, ks)
}

/// pass^k at each k of `ks` (ascending) from how many seeds passed c of
/// their `n` runs, for each c (`seeds_by_passes[c]`): a campaign keeps
/// these counts, not every seed.
pub fn pass_hat_ks_of_counts(seeds_by_passes: &[u64], n: u64, ks: &[u64]) -> Vec<f64> {
    of_counts(
        (0..)
            .zip(seeds_by_passes.iter().copied())
            .filter(|&(_, m)| m > 0),
        n,
        ks,
    )
}

/// The mean of C(c, k) / C(n, k) over seeds, given as (c, how many seeds
/// passed c times): one running product per distinct c, so the work is
/// bounded by the runs counted, not by their number squared.
fn of_counts(counts: impl Iterator<Item = (u64, u64)>, n: u64, ks: &[u64]) -> Vec<f64> {
    let mut total = vec![0.0; ks.len()];
    let mut seeds = 0;
    for (c, m) in counts {
        seeds += m;
        for (t, r) in total.iter_mut().zip(ratios(c, n, ks)) {
            *t += m as f64 * r;
        }
    }
    // A k of 0 or past `n` is NaN already, from `ratios`.
    total
        .into_iter()
        .map(|t| {
            if seeds == 0 {
                f64::NAN
            } else {
                t / seeds as f64
            }
        })
        .collect()
}

/// pass@k of one case that passed `c` of its `n` runs:
/// 1 − C(n − c, k) / C(n, k), the unbiased estimate of "at least one of k
/// fresh runs passes" (Chen et al. 2021, the HumanEval estimator).
pub fn pass_at_k(c: u64, n: u64, k: u64) -> f64 {
    pass_at_ks(c, n, &[k])[0]
}

/// [`pass_at_k`] at each k of `ks` (ascending).
pub fn pass_at_ks(c: u64, n: u64, ks: &[u64]) -> Vec<f64> {
    if c > n {
        return vec![f64::NAN; ks.len()];
    }
    // At k = 1 the estimate is c / n, pass^1's: computed as pass^1 is,
    // not as 1 − (n − c) / n, so the two print the same number.
    (ks.iter().zip(ratios(n - c, n, ks)))
        .map(|(&k, r)| if k == 1 { c as f64 / n as f64 } else { 1.0 - r })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_at_k_is_one_minus_the_chance_that_k_draws_all_fail() {
        assert_eq!(pass_at_k(0, 3, 1), 0.0);
        assert!(close(pass_at_k(1, 3, 1), 1.0 / 3.0));
        // 1 of 3 passed: two draws miss it with chance C(2,2)/C(3,2) = 1/3.
        assert!(close(pass_at_k(1, 3, 2), 2.0 / 3.0));
        assert_eq!(pass_at_k(1, 3, 3), 1.0);
        assert!(pass_at_k(1, 3, 4).is_nan());
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-4
    }

    #[test]
    fn wilson_matches_published_values() {
        // 81 of 263 (Wilson 1927 style worked example): 0.2553 .. 0.3662.
        let (lo, hi) = wilson(81, 263, Z95);
        assert!(close(lo, 0.2553) && close(hi, 0.3662), "{lo} {hi}");
        // All pass: the low end stays below 1, the high end is 1.
        let (lo, hi) = wilson(20, 20, Z95);
        assert!(close(lo, 0.8389) && hi == 1.0, "{lo} {hi}");
        for n in 1..=100 {
            assert_eq!(
                (wilson(n, n, Z95).1, wilson(0, n, Z95).0),
                (1.0, 0.0),
                "{n}"
            );
        }
        // None pass: mirror image.
        let (lo, hi) = wilson(0, 20, Z95);
        assert!(lo == 0.0 && close(hi, 0.1611), "{lo} {hi}");
        assert_eq!(wilson(0, 0, Z95), (0.0, 1.0));
    }

    #[test]
    fn wilson_narrows_with_more_runs() {
        let (a, b) = wilson(50, 100, Z95);
        let (c, d) = wilson(500, 1000, Z95);
        assert!(a < c && d < b);
        assert!(a < 0.5 && 0.5 < b);
    }

    #[test]
    fn pass_at_1_and_pass_hat_1_are_the_same_number() {
        for (c, n) in [(3, 10), (7, 10), (1, 3), (2, 3), (0, 5), (5, 5)] {
            assert_eq!(pass_at_k(c, n, 1), pass_hat_k(&[c], n, 1), "{c} of {n}");
        }
    }

    #[test]
    fn pass_hat_k_is_the_chance_all_k_pass() {
        // One seed passing 3 of 4: pass^1 = 3/4, pass^2 = C(3,2)/C(4,2) = 1/2,
        // pass^4 = 0.
        assert!(close(pass_hat_k(&[3], 4, 1), 0.75));
        assert!(close(pass_hat_k(&[3], 4, 2), 0.5));
        assert!(close(pass_hat_k(&[3], 4, 4), 0.0));
        // Two seeds, one always passing, one never: pass^k = 1/2 for every k.
        for k in 1..=3 {
            assert!(close(pass_hat_k(&[3, 0], 3, k), 0.5));
        }
        // Deterministic runs repeat their result: pass^k = pass^1.
        assert!(close(pass_hat_k(&[5, 5, 0, 5], 5, 5), 0.75));
        assert!(pass_hat_k(&[1], 2, 3).is_nan());
    }

    #[test]
    fn many_runs_give_numbers_not_nan() {
        // C(2400, 1200) overflows a float: the ratio of two was NaN.
        assert_eq!(pass_at_k(1, 2400, 2400), 1.0);
        assert_eq!(pass_at_k(0, 2400, 1200), 0.0);
        assert_eq!(pass_hat_k(&[2400], 2400, 2400), 1.0);
        assert_eq!(pass_hat_k(&[2399], 2400, 2400), 0.0);
        // 2399 of 2400: pass^1200 = C(2399, 1200) / C(2400, 1200) = 1200/2400.
        assert!(close(pass_hat_k(&[2399], 2400, 1200), 0.5));
        assert!(close(pass_at_k(1, 2400, 1200), 0.5));
        // Ten million runs of one seed, every reported k: at once.
        let n = 10_000_000;
        let ks = reported_ks(n);
        let hat = pass_hat_ks(&[n - 1], n, &ks);
        assert!(hat.iter().all(|v| v.is_finite()), "{hat:?}");
        assert_eq!(*hat.last().unwrap(), 0.0);
    }

    #[test]
    fn a_curve_is_its_points() {
        let ks = reported_ks(40);
        let c = 17;
        for (k, (at, hat)) in
            ks.iter().zip(
                pass_at_ks(c, 40, &ks)
                    .into_iter()
                    .zip(pass_hat_ks(&[c, 40], 40, &ks)),
            )
        {
            assert_eq!(at, pass_at_k(c, 40, *k));
            assert_eq!(hat, pass_hat_k(&[c, 40], 40, *k));
        }
        let counts = [1, 0, 2, 0, 1];
        assert_eq!(
            pass_hat_ks_of_counts(&counts, 4, &[1, 2, 3, 4]),
            pass_hat_ks(&[0, 2, 2, 4], 4, &[1, 2, 3, 4])
        );
    }

    #[test]
    fn the_reported_k_are_every_k_to_16_then_powers_of_two_then_n() {
        assert_eq!(reported_ks(1), [1]);
        assert_eq!(reported_ks(16), (1..=16).collect::<Vec<_>>());
        let mut big: Vec<u64> = (1..=16).collect();
        big.extend([32, 64, 128, 256, 512, 1024, 2048, 2400]);
        assert_eq!(reported_ks(2400), big);
        assert_eq!(reported_ks(64).last(), Some(&64));
        assert_eq!(reported_ks(64).len(), 18);
    }

    #[test]
    fn both_ways_of_a_ratio_agree_and_neither_runs_long() {
        // The product over k, factor by factor, as the reference.
        let reference = |a: u64, n: u64, k: u64| {
            (0..k).fold(1.0f64, |p, i| {
                if i < a {
                    p * (a - i) as f64 / (n - i) as f64
                } else {
                    0.0
                }
            })
        };
        for (a, n) in [
            (1990, 2000),
            (1999, 2000),
            (2000, 2000),
            (1000, 2000),
            (3, 2000),
        ] {
            let ks = reported_ks(n);
            for (k, got) in ks.iter().zip(ratios(a, n, &ks)) {
                let want = reference(a, n, *k);
                assert!(
                    (got - want).abs() <= 1e-12 * want.abs().max(1e-300),
                    "C({a}, {k}) / C({n}, {k}): {got} against {want}"
                );
            }
        }
        // Every count a merged report may claim, at once: nearly all of a
        // trillion runs passing, all of them, a thousand short.
        for (a, n) in [
            (1_000_000_000_000, 1_000_000_000_000),
            (999_999_999_000, 1_000_000_000_000),
            (10_000_000 - 9_650, 10_000_000),
        ] {
            let ks = reported_ks(n);
            assert!(ratios(a, n, &ks).iter().all(|r| (0.0..=1.0).contains(r)));
        }
    }
}
