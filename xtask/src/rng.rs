//! A small deterministic generator (xorshift64*, Vigna 2016) for test and
//! benchmark inputs: fast, and the same sequence from the same seed, so a
//! failure on random inputs reproduces and two benchmark runs see the same
//! inputs. The one generator of the benchmarks here and the integration
//! tests (`aqueduct-tests` re-exports it).

/// The generator's state; any non-zero seed.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// A generator from `seed` (0, which xorshift never leaves, becomes 1).
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in `0..n` (0 for `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform in [-1000, 1000) with full significands.
    pub fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2000.0 - 1000.0
    }

    /// An f32 with a random sign and significand and an exponent in
    /// `[lo, hi)` (unbiased).
    pub fn f32_exp(&mut self, lo: i32, hi: i32) -> f32 {
        let e = lo + self.below((hi - lo) as u64) as i32;
        let bits = (self.u32() & 0x807F_FFFF) | ((e + 127) as u32) << 23;
        f32::from_bits(bits)
    }

    /// Log-uniform in `1..=max`.
    pub fn size(&mut self, max: u64) -> u64 {
        let bits = 64 - max.leading_zeros() as u64;
        let b = self.below(bits) + 1;
        let v = (1u64 << (b - 1)) + self.below(1u64 << (b - 1));
        v.clamp(1, max)
    }
}
