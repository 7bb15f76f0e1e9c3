//! Seeded random inputs: uniform in [-1, 1] (a network's weights in [-s, s], s = 1 /
//! sqrt(fan-in); the terms of a sum in [0, 1]), never zeros, so every kernel is checked on
//! data where a dropped term or a wrong index changes the result.

use kernel::Shape;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The inputs of `shape`, in [`Shape::inputs`] order. The same seed gives the same data.
pub fn random_inputs(shape: &Shape, seed: u64) -> Vec<Vec<f32>> {
    shape
        .inputs()
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut rng =
                StdRng::seed_from_u64(seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 1)));
            (0..t.len())
                .map(|_| t.draw(rng.random_range(-1.0f32..=1.0)))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_seeded_nonzero_and_distinct() {
        let s = Shape::gemm(8, 9, 10);
        let a = random_inputs(&s, 1);
        assert_eq!(a, random_inputs(&s, 1));
        assert_ne!(a, random_inputs(&s, 2));
        assert_eq!((a[0].len(), a[1].len()), (80, 90));
        assert_ne!(a[0][..10], a[1][..10], "A and B differ");
        assert!(a.iter().flatten().all(|v| (-1.0..=1.0).contains(v)));
        assert!(a.iter().flatten().filter(|v| **v == 0.0).count() < 2);
    }
}
