//! Seeded random unit vectors for tests (no `rand` dependency: a SplitMix64 is enough).
#![allow(dead_code)]

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f32 {
        let u1 = self.unit().max(1e-300);
        let u2 = self.unit();
        ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
    }

    /// A random direction: uniform on the unit sphere.
    pub fn unit_vector(&mut self, dim: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dim).map(|_| self.normal()).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

pub fn random_items(seed: u64, n: usize, dim: usize, first_id: u64) -> Vec<(u64, Vec<f32>)> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| (first_id + i as u64, rng.unit_vector(dim)))
        .collect()
}

/// Fraction of `exact`'s ids found in `approx`.
pub fn recall(approx: &[(u64, f32)], exact: &[(u64, f32)]) -> f64 {
    if exact.is_empty() {
        return 1.0;
    }
    let hit = exact
        .iter()
        .filter(|e| approx.iter().any(|a| a.0 == e.0))
        .count();
    hit as f64 / exact.len() as f64
}

/// Real all-MiniLM-L6-v2 embeddings of Traefik doc sentences (see
/// `fixtures/make-fixture`), dequantised from i8 and renormalised.
pub fn real_embeddings() -> (usize, Vec<Vec<f32>>) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/traefik-minilm.i8");
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(&bytes[..8], b"RVIXFIX1", "{path}: not a fixture");
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let (dim, n) = (word(8), word(12));
    let scales = &bytes[16..16 + 4 * n];
    let codes = &bytes[16 + 4 * n..];
    assert_eq!(codes.len(), n * dim, "{path}: truncated");
    let vectors = (0..n)
        .map(|i| {
            let scale = f32::from_le_bytes(scales[4 * i..4 * i + 4].try_into().unwrap());
            let v: Vec<f32> = codes[i * dim..(i + 1) * dim]
                .iter()
                .map(|&c| c as i8 as f32 * scale)
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / norm).collect()
        })
        .collect();
    (dim, vectors)
}
