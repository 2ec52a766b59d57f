//! The main job's command-line options, defined once for its two front ends,
//! `aqueduct gemm` and `cargo xtask run`, so their names, meanings and
//! defaults cannot drift apart (feature `cli`, on by default; the library
//! itself never parses arguments, and without the feature it has no
//! argument parser among its dependencies).
//!
//! The values are parsed by [`job::parse_type`] and [`job::parse_trans`],
//! the main job's own parsers; sizes must be at least 1, checked by clap so
//! that a zero is a usage error (exit status 2) rather than a failed run.

use std::path::PathBuf;

use clap::Args;
use clap::builder::RangedU64ValueParser;

use crate::catalog::DataType;
use crate::job::{self, GemmJob};

/// A GEMM dimension or batch count: 1 or more.
pub fn dimension() -> RangedU64ValueParser<u32> {
    RangedU64ValueParser::new().range(1..=u64::from(u32::MAX))
}

/// How A and B are stored and how many problems there are: what a GEMM's
/// options say besides its sizes.
#[derive(Args, Clone, Debug, PartialEq)]
pub struct OperandArgs {
    /// A and B's element type: f16, bf16, f32, fp8 or i8 (C and D: the
    /// same, f32 for fp8, i32 for i8)
    #[arg(long = "type", value_name = "TYPE", default_value = "f16", value_parser = job::parse_type)]
    pub input: DataType,
    /// Whether A and B are stored transposed, A's letter first: NN, NT, TN
    /// or TT
    #[arg(long, value_name = "NN|NT|TN|TT", default_value = "NT", value_parser = job::parse_trans)]
    pub trans: (bool, bool),
    /// Problems in the batch
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = dimension())]
    pub batch: u32,
}

/// The main job's options: the agent, the problem and the trace.
#[derive(Args, Clone, Debug, PartialEq)]
pub struct GemmArgs {
    /// The GPU agent to run on: `amdgpu:N` or `amdgpu://GPU-<uuid>`
    #[arg(long, value_name = "STRING", default_value = "amdgpu:0")]
    pub device: String,
    /// Rows of D
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = dimension())]
    pub m: u32,
    /// Columns of D
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = dimension())]
    pub n: u32,
    /// The inner dimension
    #[arg(long, value_name = "N", default_value_t = 512, value_parser = dimension())]
    pub k: u32,
    /// Type, layout and batch count (clap ignores a flattened field's doc
    /// comment: the options' own help text is what `--help` shows).
    #[command(flatten)]
    pub operands: OperandArgs,
    /// Write a Chrome/Perfetto trace of the run to PATH
    #[arg(long, value_name = "PATH")]
    pub trace: Option<PathBuf>,
    /// Test hook: check D against a reference computed from another B, so
    /// the run must fail (shows that a wrong result exits non-zero).
    #[arg(long, hide = true)]
    pub wrong_reference: bool,
}

impl OperandArgs {
    /// An M × N × K job with these operands, the rest as by default.
    pub fn job(&self, m: u32, n: u32, k: u32) -> GemmJob {
        let (trans_a, trans_b) = self.trans;
        GemmJob {
            m,
            n,
            k,
            batch: self.batch,
            input: self.input,
            trans_a,
            trans_b,
            ..GemmJob::default()
        }
    }
}

impl GemmArgs {
    /// The job these options describe.
    pub fn job(&self) -> GemmJob {
        GemmJob {
            device: self.device.clone(),
            trace: self.trace.clone(),
            wrong_reference: self.wrong_reference,
            ..self.operands.job(self.m, self.n, self.k)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        gemm: GemmArgs,
    }

    fn parse(args: &[&str]) -> Result<GemmJob, clap::Error> {
        Cli::try_parse_from(std::iter::once("gemm").chain(args.iter().copied()))
            .map(|c| c.gemm.job())
    }

    #[test]
    fn no_options_give_the_default_job() {
        assert_eq!(parse(&[]).ok(), Some(GemmJob::default()));
    }

    #[test]
    fn options_fill_the_job() {
        let job = parse(&[
            "--device", "amdgpu:1", "--m", "64", "--n", "32", "--k", "16", "--type", "fp8",
            "--trans", "TN", "--batch", "3", "--trace", "t.json",
        ]);
        let expected = GemmJob {
            device: "amdgpu:1".into(),
            m: 64,
            n: 32,
            k: 16,
            batch: 3,
            input: DataType::Float8,
            trans_a: true,
            trans_b: false,
            trace: Some("t.json".into()),
            ..GemmJob::default()
        };
        assert_eq!(job.ok(), Some(expected));
    }

    #[test]
    fn zero_sizes_and_unknown_types_are_usage_errors() {
        for args in [
            &["--m", "0"][..],
            &["--batch", "0"],
            &["--k", "1k"],
            &["--type", "f64"],
            &["--trans", "NX"],
        ] {
            let err = parse(args).err();
            assert_eq!(
                err.map(|e| e.kind()),
                Some(clap::error::ErrorKind::ValueValidation),
                "{args:?}"
            );
        }
    }
}
