//! The numbers a campaign (and `test --repeat`) reports: the pass rate's
//! 95% Wilson score interval, pass^k (the chance that k runs of the same
//! seed all pass) and pass@k (the chance that at least one of k does).

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
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// C(n, k) as a float (exact for the small n a campaign repeats).
fn choose(n: u64, k: u64) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// pass^k over seeds that each ran `n` times: the mean over seeds of
/// C(c, k) / C(n, k), where c is how many of that seed's runs passed — the
/// unbiased estimate of "k fresh runs of a seed all pass".
pub fn pass_hat_k(passes_per_seed: &[u64], n: u64, k: u64) -> f64 {
    let mut seeds_by_passes = vec![0; n as usize + 1];
    for &c in passes_per_seed {
        if let Some(slot) = seeds_by_passes.get_mut(c as usize) {
            *slot += 1;
        }
    }
    pass_hat_k_of_counts(&seeds_by_passes, n, k)
}

/// pass^k from how many seeds passed c of their `n` runs, for each c
/// (`seeds_by_passes[c]`): a campaign keeps these counts, not every seed.
pub fn pass_hat_k_of_counts(seeds_by_passes: &[u64], n: u64, k: u64) -> f64 {
    let seeds: u64 = seeds_by_passes.iter().sum();
    if seeds == 0 || k == 0 || k > n {
        return f64::NAN;
    }
    let total: f64 = seeds_by_passes
        .iter()
        .enumerate()
        .map(|(c, &m)| m as f64 * choose(c as u64, k))
        .sum();
    total / (seeds as f64 * choose(n, k))
}

/// pass@k of one case that passed `c` of its `n` runs:
/// 1 − C(n − c, k) / C(n, k), the unbiased estimate of "at least one of k
/// fresh runs passes" (Chen et al. 2021, the HumanEval estimator).
pub fn pass_at_k(c: u64, n: u64, k: u64) -> f64 {
    if k == 0 || k > n || c > n {
        return f64::NAN;
    }
    1.0 - choose(n - c, k) / choose(n, k)
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
}
