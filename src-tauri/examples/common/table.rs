//! What the window benchmarks share: the statistics of frame times and the table that puts each
//! measured size beside the baseline (the first), with the ratios. Included by `#[path]`.

use std::fmt::Write as _;

/// The value at quantile `q` (nearest rank), or NaN for no values.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

pub fn max(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NAN, f64::max)
}

/// The share of frames that took less than one frame of a 60 Hz display, in percent.
pub fn under_a_frame(deltas: &[f64]) -> f64 {
    if deltas.is_empty() {
        return f64::NAN;
    }
    100.0 * deltas.iter().filter(|d| **d < 16.7).count() as f64 / deltas.len() as f64
}

/// A row: its label, its value for one measured size, and its unit ("ms", "%" or "").
pub type Row<F> = (&'static str, fn(&F) -> f64, &'static str);

/// `| Measure | N tasks | ... | N/BASE | ... |`, a line per row; the first of `all` is the baseline.
pub fn ratio_table<F>(all: &[F], tasks: fn(&F) -> usize, rows: &[Row<F>]) -> String {
    let base = &all[0];
    let mut out = String::from("| Measure |");
    for f in all {
        let _ = write!(out, " {} tasks |", tasks(f));
    }
    for f in &all[1..] {
        let _ = write!(out, " {}/{} |", tasks(f), tasks(base));
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(all.len() * 2 - 1));
    out.push('\n');
    for (name, value, unit) in rows {
        let _ = write!(out, "| {name} |");
        for f in all {
            let v = value(f);
            let _ = if *unit == "ms" { write!(out, " {v:.1} ms |") } else { write!(out, " {v:.0}{unit} |") };
        }
        for f in &all[1..] {
            let (v, b) = (value(f), value(base));
            let _ = if b > 0.0 { write!(out, " {:.2}× |", v / b) } else { write!(out, " – |") };
        }
        out.push('\n');
    }
    out
}
