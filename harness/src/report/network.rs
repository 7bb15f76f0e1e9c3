//! A network's time by category and Amdahl's law for each swap, derived once from the run's
//! step times ([`crate::results::NetworkResults`]) and rendered as Markdown and charts.
//!
//! Amdahl: a row that speeds up the operator taking a share `f` of its parent row's time by
//! `s` (the operator's own speedup) should run the whole network `1 / ((1 - f) + f / s)`
//! times faster. Where the measured end-to-end speedup falls short of that, the swap cost
//! time elsewhere: conversions it needs, launches it adds.

use crate::results::{NetworkResults, NetworkRowTimes};
use kernel::network::Category;
use std::fmt::Write;

/// The time of each category, in [`Category::ALL`] order; the gaps are what the end-to-end
/// time has beyond the steps' sum (never below 0).
pub fn by_category(r: &NetworkRowTimes) -> [f64; 6] {
    let mut out = [0.0; 6];
    for s in &r.steps {
        out[index(s.category)] += s.ms;
    }
    let steps: f64 = out.iter().sum();
    out[index(Category::Gaps)] += (r.total_ms - steps).max(0.0);
    out
}

fn index(c: Category) -> usize {
    Category::ALL
        .iter()
        .position(|&x| x == c)
        .expect("every category is in ALL")
}

/// One swap against the row it changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Amdahl {
    pub id: String,
    /// The row it changes.
    pub parent: String,
    pub swapped: String,
    pub category: Category,
    /// The swapped operator's time in the parent row over its time in this one.
    pub kernel_speedup: f64,
    /// The operator's share of the parent row's end-to-end time.
    pub share: f64,
    pub predicted: f64,
    pub measured: f64,
    /// The rest of the pass (everything but the swapped operator) in the parent row over the
    /// same in this one: 1 where only the swap changed.
    pub rest_speedup: f64,
}

impl Amdahl {
    /// The most any speedup of the operator can give the whole pass: 1 / (1 - f).
    pub fn bound(&self) -> f64 {
        1.0 / (1.0 - self.share)
    }

    /// Where the measured speedup passes [`Self::bound`] by more than the timings' usual
    /// scatter, why: the rest of the pass, which the swap left alone, was faster too.
    pub fn beyond_bound(&self) -> Option<String> {
        (self.measured > 1.05 * self.bound()).then(|| {
            format!(
                "`{}` measures {:.2}x, more than Amdahl's law allows any speedup of its {} \
                 ({:.2}x, with f = {:.0}%): the rest of the pass, which the swap left alone, \
                 ran {:.2}x faster too, so the machine's pace changed between the two rows' \
                 timings",
                self.id,
                self.measured,
                self.category,
                self.bound(),
                100.0 * self.share,
                self.rest_speedup
            )
        })
    }
}

/// Amdahl's prediction beside the measurement for every row that swaps a rung in, against
/// its parent row (the first row where the run does not name one).
pub fn amdahl(n: &NetworkResults) -> Vec<Amdahl> {
    let Some(first) = n.rows.iter().find(|r| r.swapped.is_none()) else {
        return Vec::new();
    };
    n.rows
        .iter()
        .filter_map(|r| {
            let (swapped, category) = r.swapped.clone()?;
            let base = r
                .parent
                .as_ref()
                .and_then(|p| n.rows.iter().find(|b| b.id == *p))
                .unwrap_or(first);
            let (t0, t1) = (
                by_category(base)[index(category)],
                by_category(r)[index(category)],
            );
            if t0 <= 0.0 || t1 <= 0.0 || base.total_ms <= 0.0 || r.total_ms <= 0.0 {
                return None;
            }
            let (s, f) = (t0 / t1, t0 / base.total_ms);
            Some(Amdahl {
                id: r.id.clone(),
                parent: base.id.clone(),
                swapped,
                category,
                kernel_speedup: s,
                share: f,
                predicted: 1.0 / ((1.0 - f) + f / s),
                measured: base.total_ms / r.total_ms,
                rest_speedup: (base.total_ms - t0) / (r.total_ms - t1).max(f64::MIN_POSITIVE),
            })
        })
        .collect()
}

fn ms(v: f64) -> String {
    match v {
        v if v >= 100.0 => format!("{v:.0}"),
        v if v >= 1.0 => format!("{v:.2}"),
        v => format!("{v:.3}"),
    }
}

/// The breakdown table, the Amdahl table and the batch sweep of one network shape.
pub fn markdown(n: &NetworkResults) -> String {
    let mut md = String::new();
    let w = n.workload.name();
    let _ = writeln!(md, "## {w} {}: time by category (ms)\n", n.label);
    let _ = writeln!(md, "Steps timed as follows: {}.\n", n.method);
    for f in &n.failures {
        let _ = writeln!(md, "- Not measured: {f}");
    }
    if !n.failures.is_empty() {
        md.push('\n');
    }
    // The categories some row spends time in (a CNN has no attention).
    let used: Vec<usize> = (0..Category::ALL.len())
        .filter(|&i| n.rows.iter().any(|r| by_category(r)[i] > 0.0))
        .collect();
    let mut head = String::from("| row | end to end |");
    let mut rule = String::from("|---|---:|");
    for &i in &used {
        let _ = write!(head, " {} |", Category::ALL[i]);
        rule.push_str("---:|");
    }
    let _ = writeln!(md, "{head}\n{rule}");
    for r in &n.rows {
        let cats = by_category(r);
        let mut line = format!("| {} | {} |", r.id, ms(r.total_ms));
        for v in used.iter().map(|&i| cats[i]) {
            let share = if r.total_ms > 0.0 {
                v / r.total_ms
            } else {
                0.0
            };
            let _ = write!(line, " {} ({:.0}%) |", ms(v), 100.0 * share);
        }
        let _ = writeln!(md, "{line}");
    }
    let swaps = amdahl(n);
    if !swaps.is_empty() {
        let _ = writeln!(
            md,
            "\n### Amdahl's law: each swap against the row it changes\n\n\
             The operator's share f of the parent row's time and its own speedup s predict the \
             whole network's speedup 1 / ((1 - f) + f / s); the measured speedup is the parent \
             row's end-to-end time over the row's.\n"
        );
        let _ = writeln!(
            md,
            "| row | over | swapped in | operator | share f | operator speedup s | end-to-end predicted | end-to-end measured |\n|---|---|---|---|---:|---:|---:|---:|"
        );
        for a in &swaps {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.0}% | {:.2}x | {:.2}x | {:.2}x |",
                a.id,
                a.parent,
                a.swapped,
                a.category,
                100.0 * a.share,
                a.kernel_speedup,
                a.predicted,
                a.measured
            );
        }
        let beyond: Vec<String> = swaps.iter().filter_map(Amdahl::beyond_bound).collect();
        if !beyond.is_empty() {
            let _ = writeln!(md, "\n- {}.", beyond.join(".\n- "));
        }
    }
    if let Some(s) = &n.batch_sweep {
        let _ = writeln!(
            md,
            "\n### Time per image against the batch size\n\n{}.\n",
            s.method
        );
        let graph = s.points.iter().any(|p| p.graph_ms_per_item.is_some());
        let _ = match graph {
            true => writeln!(
                md,
                "| batch | ms per image | ms per image, CUDA graph |\n|---:|---:|---:|"
            ),
            false => writeln!(md, "| batch | ms per image |\n|---:|---:|"),
        };
        for p in &s.points {
            let g = p.graph_ms_per_item.map(|g| format!(" {} |", ms(g)));
            let _ = writeln!(
                md,
                "| {} | {} |{}",
                p.batch,
                ms(p.ms_per_item),
                g.unwrap_or_default()
            );
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::StepTime;
    use kernel::{Shape, Workload};

    fn row(id: &str, swapped: Option<&str>, total: f64, conv: f64, other: f64) -> NetworkRowTimes {
        NetworkRowTimes {
            id: id.into(),
            swapped: swapped.map(|s| (s.to_string(), Category::Convolution)),
            parent: None,
            total_ms: total,
            steps: vec![
                StepTime {
                    label: "conv".into(),
                    category: Category::Convolution,
                    ms: conv,
                },
                StepTime {
                    label: "pool".into(),
                    category: Category::Elementwise,
                    ms: other,
                },
            ],
        }
    }

    fn net(rows: Vec<NetworkRowTimes>) -> NetworkResults {
        NetworkResults {
            workload: Workload::Cnn,
            shape: Shape::Cnn { b: 4 },
            label: "4".into(),
            method: "test".into(),
            rows,
            batch_sweep: None,
            failures: Vec::new(),
        }
    }

    #[test]
    fn categories_sum_to_the_end_to_end_time_with_the_gap() {
        let r = row("a", None, 10.0, 6.0, 3.0);
        let c = by_category(&r);
        assert_eq!(c[index(Category::Convolution)], 6.0);
        assert_eq!(c[index(Category::Elementwise)], 3.0);
        assert_eq!(c[index(Category::Gaps)], 1.0);
        assert_eq!(c.iter().sum::<f64>(), 10.0);
        // Steps timed alone may add up to more than the pass: no negative gap.
        assert_eq!(
            by_category(&row("b", None, 8.0, 6.0, 3.0))[index(Category::Gaps)],
            0.0
        );
    }

    #[test]
    fn amdahl_predicts_from_the_first_rows_share() {
        // Convolution is 80% of the first row and becomes 4x faster: 1 / (0.2 + 0.8 / 4) =
        // 2.5x predicted; the row measured 10 / 5 = 2x (it lost time elsewhere).
        let n = net(vec![
            row("base", None, 10.0, 8.0, 2.0),
            row("fast", Some("conv-fast"), 5.0, 2.0, 3.0),
        ]);
        let a = amdahl(&n);
        assert_eq!(a.len(), 1);
        assert!((a[0].share - 0.8).abs() < 1e-12);
        assert!((a[0].kernel_speedup - 4.0).abs() < 1e-12);
        assert!((a[0].predicted - 2.5).abs() < 1e-12);
        assert!((a[0].measured - 2.0).abs() < 1e-12);
        let md = markdown(&n);
        assert!(
            md.contains("| fast | base | conv-fast | convolution | 80% | 4.00x | 2.50x | 2.00x |"),
            "{md}"
        );
    }

    #[test]
    fn a_swap_is_measured_against_its_parent_row_when_the_run_names_one() {
        // "mid" halves the other layers; "both" then speeds the convolution up 4x over "mid":
        // against "mid" the convolution is 8 / 9 of the time.
        let mut both = row("both", Some("conv-fast"), 3.0, 2.0, 1.0);
        both.parent = Some("mid".into());
        let n = net(vec![
            row("base", None, 10.0, 8.0, 2.0),
            row("mid", Some("pool-fast"), 9.0, 8.0, 1.0),
            both,
        ]);
        let a = amdahl(&n);
        let b = a.iter().find(|a| a.id == "both").unwrap();
        assert_eq!(b.parent, "mid");
        assert!((b.share - 8.0 / 9.0).abs() < 1e-12, "{b:?}");
        assert!((b.kernel_speedup - 4.0).abs() < 1e-12);
        assert!((b.measured - 3.0).abs() < 1e-12);
        // A row without a parent (runs from before) is measured against the first row.
        let m = a.iter().find(|a| a.id == "mid").unwrap();
        assert_eq!(m.parent, "base");
    }

    #[test]
    fn a_measured_speedup_beyond_amdahls_bound_is_said_to_be_the_machines() {
        // Convolution is 80% of the first row: no convolution, however fast, gives more than
        // 1 / 0.2 = 5x. "fast" measures 10 / 1.6 = 6.25x, its pool 2 / 0.6 = 3.33x faster
        // although the swap did not touch it.
        let n = net(vec![
            row("base", None, 10.0, 8.0, 2.0),
            row("fast", Some("conv-fast"), 1.6, 1.0, 0.6),
            row("honest", Some("conv-ok"), 5.0, 3.0, 2.0),
        ]);
        let a = amdahl(&n);
        assert!((a[0].bound() - 5.0).abs() < 1e-9);
        let md = markdown(&n);
        assert!(
            md.contains(
                "- `fast` measures 6.25x, more than Amdahl's law allows any speedup of its \
                 convolution (5.00x, with f = 80%): the rest of the pass, which the swap left \
                 alone, ran 3.33x faster too, so the machine's pace changed between the two \
                 rows' timings."
            ),
            "{md}"
        );
        assert!(!md.contains("`honest` measures"), "{md}");
    }
}
