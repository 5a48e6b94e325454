//! Deterministic pseudo-random inputs for the kernels' unit tests.

/// `len` values in [-1, 1) from an xorshift generator seeded by `seed`.
pub(crate) fn values(seed: u64, len: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 20_000) as f32 / 10_000.0 - 1.0
        })
        .collect()
}
