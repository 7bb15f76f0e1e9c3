//! The report model: every figure a table, chart or page shows, derived once from a run's raw
//! samples. Markdown, CSV, the terminal, the charts and the HTML pages render this model and
//! compute nothing of their own, so they can never disagree.

use super::roofline::{Ceilings, Roof};
use crate::results::{Row, RunResults, ShapeResults, Status, TrafficSource};
use kernel::{DeviceKind, Precision, Role, Shape, Stage, Workload};

/// A whole run, derived.
#[derive(Debug, Clone)]
pub struct Report {
    pub run: RunResults,
    pub kind: DeviceKind,
    pub ceilings: Option<Ceilings>,
    pub workloads: Vec<WorkloadReport>,
}

#[derive(Debug, Clone)]
pub struct WorkloadReport {
    pub workload: Workload,
    pub shapes: Vec<ShapeReport>,
}

#[derive(Debug, Clone)]
pub struct ShapeReport {
    pub shape: Shape,
    pub label: String,
    pub flops: f64,
    /// What the rows' outputs were checked against.
    pub checked_against: String,
    /// Which reference each precision present is compared with, in words.
    pub references: Vec<ReferenceUse>,
    /// Rows in table order: the ladder, then references, peers and user rows.
    pub rows: Vec<RowReport>,
    /// How far the machine drifted while the shape's rows were timed, where a reference row
    /// was timed before the rungs as well as after them.
    pub drift: Option<Drift>,
    /// The widest gap between two rows that ran the same code, where it is wide enough to
    /// say: the machine's pace changed between them.
    pub same_code_gap: Option<SameCodeGap>,
}

/// A rung that runs its parent's CPU port (the same code) and was timed far from it: what the
/// machine's change of pace between the two timings can do to any ratio of rows timed apart.
#[derive(Debug, Clone, PartialEq)]
pub struct SameCodeGap {
    pub id: String,
    /// The parent's `#` cell.
    pub port_of: String,
    pub row_ms: f64,
    pub port_ms: f64,
}

impl SameCodeGap {
    /// The slower time over the faster: at least [`DISAGREEMENT`].
    pub fn factor(&self) -> f64 {
        (self.row_ms / self.port_ms).max(self.port_ms / self.row_ms)
    }

    /// The sentence the tables and pages show under the shape.
    pub fn sentence(&self) -> String {
        format!(
            "Same code, different times: `{}` runs {}'s CPU port and took {:.3} ms, where {} \
             took {:.3} ms ({:.2}x apart, beyond both spreads). Nothing but the machine's pace \
             changed between the two timings, and a ratio of two rows timed apart (`vs first`, \
             `% of ref`, the bars) can carry as much; `vs parent`, timed in alternating rounds, \
             does not.",
            self.id,
            self.port_of,
            self.row_ms,
            self.port_of,
            self.port_ms,
            self.factor()
        )
    }

    /// One line under a terminal table.
    pub fn short(&self) -> String {
        format!(
            "same code, different times: {} {:.3} ms, {} (the same CPU port) {:.3} ms ({:.2}x \
             apart: the machine's pace changed)",
            self.id,
            self.row_ms,
            self.port_of,
            self.port_ms,
            self.factor()
        )
    }
}

/// One reference row timed before a shape's rungs and again, as its own row, after them.
/// `% of ref` and `vs first` divide times taken that far apart, and carry this much drift;
/// `vs parent`, where alternating rounds give it, does not.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    pub id: String,
    pub before_ms: f64,
    pub after_ms: f64,
    /// Whether the two timings' p10-p90 ranges are disjoint: the machine, not the scatter of
    /// its samples, changed.
    pub significant: bool,
}

impl Drift {
    /// After over before: above 1, the reference ran slower once the rungs had been timed.
    pub fn ratio(&self) -> f64 {
        self.after_ms / self.before_ms
    }

    /// The ratio as the tables write a speedup: `~` inside the noise.
    fn ratio_text(&self) -> String {
        let r = self.ratio();
        let noise = if self.significant {
            "beyond the noise"
        } else if !crate::timing::matters(r) {
            "under 1%"
        } else if r.max(1.0 / r) > DISAGREEMENT {
            // Far from 1 yet not apart: the timings themselves are that scattered.
            "inside the noise, which is that wide: the machine was busy"
        } else {
            "inside the noise"
        };
        let tilde = if self.significant { "" } else { "~" };
        format!("{tilde}{:.2}x, {noise}", self.ratio())
    }

    /// The sentence the tables and pages show under the shape.
    pub fn sentence(&self) -> String {
        format!(
            "Drift: `{}` took {:.3} ms a run timed before the rungs and {:.3} ms after them \
             ({}). {DRIFT_NOTE}",
            self.id,
            self.before_ms,
            self.after_ms,
            self.ratio_text()
        )
    }

    /// One line under a terminal table; [`DRIFT_NOTE`] follows the tables once.
    pub fn short(&self) -> String {
        format!(
            "drift: {} {:.3} ms before the rungs, {:.3} ms after ({})",
            self.id,
            self.before_ms,
            self.after_ms,
            self.ratio_text()
        )
    }
}

/// What a drift means for the columns.
pub const DRIFT_NOTE: &str = "`% of ref` and `vs first` divide times taken that far apart, \
     and carry such a change of the machine.";

/// The reference the rows of one precision are compared with in `% of ref`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceUse {
    pub precision: Precision,
    /// The reference row's id; `None` when no passing reference exists for it.
    pub id: Option<String>,
    /// Whether the reference computes at that precision (else it stands in for it).
    pub same_precision: bool,
}

/// One row with everything derived from it.
#[derive(Debug, Clone)]
pub struct RowReport {
    pub row: Row,
    /// The table's `#` cell: the rung number (`07`), `ref`, `peer` or `user`.
    pub tag: String,
    /// Figures of a passing, timed row; `None` otherwise.
    pub timed: Option<Timed>,
    /// FLOP per compulsory byte (each input read once, the output written once).
    pub compulsory_intensity: f64,
    /// FLOP per byte of the traffic the row really issued, where something counted it.
    pub traffic_intensity: Option<(f64, TrafficSource)>,
    /// Against the declared parent rung.
    pub vs_parent: Option<Speedup>,
    /// Against the first rung of the ladder: the cumulative speedup.
    pub vs_first: Option<Speedup>,
    /// Percent of the throughput of the reference of the row's precision.
    pub pct_of_ref: Option<f64>,
    pub reference: Option<String>,
    /// The roof the row is judged against and the share of it reached.
    pub roof: Option<RoofShare>,
}

/// Throughput figures of a timed row; `lo`/`hi` come from the p90/p10 times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    pub median_ms: f64,
    pub p10_ms: f64,
    pub p90_ms: f64,
    /// Half the p10-p90 range relative to the median, in percent.
    pub spread_pct: f64,
    pub gflops: f64,
    pub gflops_lo: f64,
    pub gflops_hi: f64,
    /// Compulsory bytes per second, GB/s.
    pub gbps: f64,
}

/// What a shape's speed is counted in: FLOP per second, or for a memory-bound workload (the
/// reduction, the transpose...) the bytes it must move per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    Flops,
    Bytes,
}

impl Measure {
    /// The measure of `workload`'s shapes.
    pub fn of(workload: kernel::Workload) -> Self {
        if workload.memory_bound() {
            Self::Bytes
        } else {
            Self::Flops
        }
    }
}

/// A timed row's speed in one [`Measure`], in giga-units per second: at the median time, and
/// at the p90 (`lo`) and p10 (`hi`) times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub mid: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Timed {
    /// This row's speed in `measure`: GFLOP/s, or GB/s of its compulsory bytes.
    pub fn rate(&self, measure: Measure) -> Rate {
        match measure {
            Measure::Flops => Rate {
                mid: self.gflops,
                lo: self.gflops_lo,
                hi: self.gflops_hi,
            },
            Measure::Bytes => Rate {
                mid: self.gbps,
                lo: self.gbps * self.median_ms / self.p90_ms,
                hi: self.gbps * self.median_ms / self.p10_ms,
            },
        }
    }
}

/// A ratio of two rows' median times, and whether it stands out of the measured spread.
#[derive(Debug, Clone, PartialEq)]
pub struct Speedup {
    /// Time of `against` over time of this row: above 1 this row is faster.
    pub ratio: f64,
    pub against: String,
    /// `against`'s `#` cell, for compact tables ("vs 06").
    pub against_tag: String,
    /// False when the difference is inside the noise: the p10-p90 range of the paired
    /// rounds' ratios holds 1 (when [`Self::rounds`] is some), else the two rows' p10-p90
    /// time ranges overlap; or when it is under [`crate::timing::NEGLIGIBLE`].
    pub significant: bool,
    /// The two rows were timed in this many alternating rounds
    /// ([`crate::timing::PairedTiming`]), and `ratio` is the median of the rounds' ratios;
    /// `None`: it is the ratio of the two rows' medians.
    pub rounds: Option<usize>,
    /// The two rows ran the same code (one CPU port, [`Row::same_cpu_port_as`]): whatever
    /// their ratio, it is the machine's drift between them, not an idea's effect.
    pub same_code: bool,
    /// The ratio of the two rows' medians, where the rounds' ratio disagrees with it beyond
    /// both spreads and by more than [`DISAGREEMENT`], or where each stands out of its noise
    /// on the other side of 1 (the rounds say slower, the bars faster). Either the machine
    /// changed pace between the times the run timed the two rows, which the rounds, side by
    /// side, cancel, or the rung ran slower right after its parent than in its own
    /// back-to-back samples, which the medians avoid: a reader of the bars (the medians) sees
    /// a contradiction that must be said, and neither figure is to be trusted alone.
    pub medians_disagree: Option<f64>,
}

/// How far apart (a factor) the rounds' ratio and the medians' ratio of a step may lie before
/// the tables mark it: alternating rounds exist to correct the drift between rows timed apart,
/// a few percent on a quiet machine; a factor beyond this is a busy machine's doing.
pub const DISAGREEMENT: f64 = 1.25;

impl Speedup {
    /// `1.73x`, `0.86x`: two decimals are enough, as a speedup called faster or slower is
    /// at least [`crate::timing::NEGLIGIBLE`] away from 1.
    pub fn ratio_text(&self) -> String {
        format!("{:.2}x", self.ratio)
    }

    /// Why a speedup that is not [`Self::significant`] is not: too small to call, or inside
    /// the noise.
    pub fn noise_words(&self) -> &'static str {
        if crate::timing::matters(self.ratio) {
            "inside the noise"
        } else {
            "under 1%"
        }
    }

    /// [`Self::ratio_text`], with `~` in front when the difference is inside the spread;
    /// `same port` for two rows of the same code.
    pub fn cell(&self) -> String {
        if self.same_code {
            return "same port".into();
        }
        format!(
            "{}{}{}",
            if self.significant { "" } else { "~" },
            self.ratio_text(),
            if self.medians_disagree.is_some() {
                "?"
            } else {
                ""
            }
        )
    }

    /// [`Self::cell`] naming the other row: `1.73x vs 06`, `same port as 06`.
    pub fn cell_against(&self) -> String {
        if self.same_code {
            format!("same port as {}", self.against_tag)
        } else {
            format!("{} vs {}", self.cell(), self.against_tag)
        }
    }
}

/// The roofline bound of a row and how much of it the row reaches.
#[derive(Debug, Clone, PartialEq)]
pub struct RoofShare {
    pub roof: Roof,
    /// min(roof peak, intensity x bandwidth), GFLOP/s: 0 for a shape that computes nothing.
    pub bound_gflops: f64,
    /// The row's throughput over that bound; for a shape that computes nothing, its bytes
    /// (counted, else compulsory) per second over the memory's bandwidth.
    pub pct: f64,
}

/// How the table header explains `~` when every speedup compares two rows' medians.
pub const SIGNIFICANCE_NOTE: &str = "`~` marks a speedup inside the noise: the two rows' \
    p10-p90 time ranges overlap, so the run cannot tell them apart, or their medians differ by \
    less than 1%, too little to call faster or slower";

/// How the table header explains `vs parent` and `~` when steps were timed in alternation.
pub const PAIRED_NOTE: &str = "`vs parent` times the rung and its parent once more in \
    alternating rounds (a sample of each, the order swapped every round), so that the \
    machine's drift between rows timed apart cancels: it is the median of the rounds' ratios, \
    which can differ from the ratio of the two medians (`vs first` is always that ratio); `~` \
    marks a speedup inside the noise: for `vs parent`, the p10-p90 range of the rounds' ratios \
    holds 1, for `vs first`, the two rows' p10-p90 time ranges overlap, and for both, a speedup \
    under 1% either way, too little to call faster or slower; `?` after a `vs parent` \
    marks rounds that disagree with the ratio of the two medians (the bars) by more than a \
    quarter, beyond both spreads, or that call the rung slower where the medians, out of \
    their noise, call it faster (or the reverse): either the machine changed pace between the \
    rows' timings (another job, the clock), which the rounds cancel and the medians do not, \
    or the rung ran slower right after its parent than in its own back-to-back samples (on a \
    shared CPU a kernel can take several runs to regain its pace after a long one), which the \
    medians avoid; the run cannot tell which, so neither figure is sure";

/// What the tables add to [`PAIRED_NOTE`] where a step could not be timed side by side.
pub const UNPAIRED_NOTE: &str = "where timing a rung and its parent side by side failed (the \
    run's log says why), `vs parent` is the ratio of the two medians, and its `~` the overlap \
    of their p10-p90 time ranges";

/// What `same port as NN` means, for the legends of CPU runs.
pub const SAME_PORT_NOTE: &str = "`same port as NN`: the rung's idea has no CPU analogue, so \
    its CPU port is its parent's and the two rows time the same code; no speedup is shown, \
    as any difference between them is the machine's";

impl Report {
    /// Derives every figure of `run`; the ceilings come from its calibration when that
    /// belongs to its device, else from the datasheet of a known GPU.
    pub fn new(run: &RunResults) -> Self {
        let kind = DeviceKind::parse(&run.device.kind).unwrap_or(DeviceKind::Cpu);
        let ceilings = run
            .calibration
            .as_ref()
            .filter(|c| c.matches(&run.device))
            .map(Ceilings::from_calibration)
            .or_else(|| super::roofline::datasheet(&run.device.name));
        let workloads = run
            .workloads
            .iter()
            .map(|w| WorkloadReport {
                workload: w.workload,
                shapes: w
                    .shapes
                    .iter()
                    .map(|s| ShapeReport::new(s, ceilings.as_ref()))
                    .collect(),
            })
            .collect();
        Self {
            run: run.clone(),
            kind,
            ceilings,
            workloads,
        }
    }

    /// The legend of `vs parent` and `~` for this run's tables: [`PAIRED_NOTE`] when any
    /// step was timed in alternation (with [`UNPAIRED_NOTE`] when some step that could have
    /// been was not), else [`SIGNIFICANCE_NOTE`].
    pub fn significance_note(&self) -> String {
        let steps = self
            .workloads
            .iter()
            .flat_map(|w| &w.shapes)
            .flat_map(|s| &s.rows)
            .filter_map(|r| r.vs_parent.as_ref())
            .filter(|s| !s.same_code);
        let (paired, unpaired) = steps.fold((0, 0), |(p, u), s| match s.rounds {
            Some(_) => (p + 1, u),
            None => (p, u + 1),
        });
        match (paired, unpaired) {
            (0, _) => SIGNIFICANCE_NOTE.to_string(),
            (_, 0) => PAIRED_NOTE.to_string(),
            _ => format!("{PAIRED_NOTE}; {UNPAIRED_NOTE}"),
        }
    }

    /// Whether rows were timed at all (the simulator never times).
    pub fn timed(&self) -> bool {
        self.kind != DeviceKind::Sim
    }

    /// Whether the rows are CPU ports of the kernels rather than the CUDA code.
    pub fn cpu_ports(&self) -> bool {
        self.kind == DeviceKind::Cpu
    }

    /// Every row that failed its check or could not run: (workload, shape label, row).
    pub fn failures(&self) -> impl Iterator<Item = (Workload, &str, &Row)> {
        self.workloads.iter().flat_map(|w| {
            w.shapes.iter().flat_map(move |s| {
                s.rows
                    .iter()
                    .filter(|r| r.row.failed())
                    .map(move |r| (w.workload, s.label.as_str(), &r.row))
            })
        })
    }
}

/// The widest gap, beyond both rows' spreads and [`DISAGREEMENT`], between a rung and the
/// parent whose CPU port it runs.
fn same_code_gap(shape: &ShapeResults, rows: &[RowReport]) -> Option<SameCodeGap> {
    let timing = |id: &str| {
        shape
            .rows
            .iter()
            .find(|r| r.id == id && r.passed())
            .and_then(|r| r.timing.as_ref())
    };
    rows.iter()
        .filter_map(|r| {
            let s = r.vs_parent.as_ref().filter(|s| s.same_code)?;
            let (row, port) = (timing(&r.row.id)?, timing(&s.against)?);
            let gap = SameCodeGap {
                id: r.row.id.clone(),
                port_of: s.against_tag.clone(),
                row_ms: row.median_ms,
                port_ms: port.median_ms,
            };
            (row.stands_apart_from(port) && gap.factor() > DISAGREEMENT).then_some(gap)
        })
        .max_by(|a, b| a.factor().total_cmp(&b.factor()))
}

impl ShapeReport {
    pub fn new(shape: &ShapeResults, ceilings: Option<&Ceilings>) -> Self {
        let timed: Vec<Option<Timed>> = shape.rows.iter().map(|r| timed(shape, r)).collect();
        let find = |id: &str| shape.rows.iter().position(|r| r.id == id);
        let first = shape
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.role == Role::Rung)
            .min_by_key(|(_, r)| r.rung)
            .map(|(i, _)| i);
        // `vs parent` from the rounds that timed the two side by side, where there are any;
        // `vs first` always from the medians, so that its column orders rows as they do.
        let speedup = |i: usize, j: usize, from_rounds: bool| -> Option<Speedup> {
            let (a, b) = (timed[i]?, timed[j]?);
            let (row, other) = (&shape.rows[i], &shape.rows[j]);
            let paired = row
                .paired
                .as_ref()
                .filter(|p| from_rounds && p.against == other.id && p.rounds() > 0);
            let medians = b.median_ms / a.median_ms;
            let (ratio, significant) = match paired.map(|p| p.ratio_summary()) {
                Some((median, p10, p90)) => (
                    median,
                    (p10 > 1.0 || p90 < 1.0) && crate::timing::matters(median),
                ),
                None => (
                    b.median_ms / a.median_ms,
                    (row.timing.as_ref())
                        .zip(other.timing.as_ref())
                        .is_some_and(|(x, y)| x.stands_apart_from(y)),
                ),
            };
            // The medians' ratio's own range: the parent's p10-p90 over the row's. Far apart,
            // or each sure of the opposite direction: a bar longer than its parent's labelled
            // slower, or shorter labelled faster.
            let apart = paired
                .map(|p| p.ratio_summary())
                .is_some_and(|(_, p10, p90)| {
                    let (Some(x), Some(y)) = (row.timing.as_ref(), other.timing.as_ref()) else {
                        return false;
                    };
                    let (lo, hi) = (y.p10_ms / x.p90_ms, y.p90_ms / x.p10_ms);
                    let far = (ratio / medians).max(medians / ratio) > DISAGREEMENT;
                    let opposed =
                        significant && x.stands_apart_from(y) && (ratio > 1.0) != (medians > 1.0);
                    (p90 < lo || p10 > hi) && far || opposed
                });
            Some(Speedup {
                ratio,
                against: other.id.clone(),
                against_tag: tag(other),
                significant,
                rounds: paired.map(|p| p.rounds()),
                same_code: row.port_id() == other.port_id(),
                medians_disagree: apart.then_some(medians),
            })
        };
        let rows: Vec<RowReport> = shape
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let reference = reference_for(shape, r.precision);
                let reference_ms = reference
                    .and_then(|j| timed[j])
                    .filter(|_| reference != Some(i))
                    .map(|t| t.median_ms);
                let compulsory_intensity = shape.flops / r.min_bytes;
                let traffic_intensity = r
                    .traffic
                    .filter(|t| t.bytes() > 0.0)
                    .map(|t| (shape.flops / t.bytes(), t.source));
                let intensity = at_intensity(compulsory_intensity, traffic_intensity);
                let roof = match (ceilings, timed[i]) {
                    (Some(c), Some(t)) if !shape.shape.workload().computes_nothing() => {
                        let bound = c.bound_gflops(r.precision, intensity);
                        Some(RoofShare {
                            roof: c.roof(r.precision),
                            bound_gflops: bound,
                            pct: 100.0 * t.gflops / bound,
                        })
                    }
                    // Nothing computed: the bound is the time its bytes take at the bandwidth.
                    (Some(c), Some(t)) => {
                        let bytes = r.traffic.map_or(r.min_bytes, |t| t.bytes());
                        Some(RoofShare {
                            roof: c.roof(r.precision),
                            bound_gflops: 0.0,
                            pct: 100.0 * bytes / (t.median_ms * 1e6) / c.bandwidth_gbs,
                        })
                    }
                    _ => None,
                };
                let vs_parent = match (r.role, &r.parent) {
                    (Role::Rung | Role::User, Some(p)) => find(p).and_then(|j| speedup(i, j, true)),
                    _ => None,
                };
                let vs_first = match r.role {
                    Role::Rung | Role::User => {
                        first.filter(|&j| j != i).and_then(|j| speedup(i, j, false))
                    }
                    _ => None,
                };
                RowReport {
                    row: r.clone(),
                    tag: tag(r),
                    timed: timed[i],
                    compulsory_intensity,
                    traffic_intensity,
                    vs_parent,
                    vs_first,
                    pct_of_ref: match (timed[i], reference_ms) {
                        (Some(t), Some(rf)) => Some(100.0 * rf / t.median_ms),
                        _ => None,
                    },
                    reference: reference.map(|j| shape.rows[j].id.clone()),
                    roof,
                }
            })
            .collect();
        let references = Precision::ALL
            .into_iter()
            .filter(|p| shape.rows.iter().any(|r| r.precision == *p))
            .map(|p| {
                let j = reference_for(shape, p);
                ReferenceUse {
                    precision: p,
                    id: j.map(|j| shape.rows[j].id.clone()),
                    same_precision: j.is_some_and(|j| shape.rows[j].precision == p),
                }
            })
            .collect();
        let drift = shape.reference_before.as_ref().and_then(|before| {
            let after = shape
                .rows
                .iter()
                .find(|r| r.id == before.id && r.passed())?
                .timing
                .as_ref()?;
            Some(Drift {
                id: before.id.clone(),
                before_ms: before.timing.median_ms,
                after_ms: after.median_ms,
                significant: after.stands_apart_from(&before.timing),
            })
        });
        let same_code_gap = same_code_gap(shape, &rows);
        Self {
            shape: shape.shape,
            label: shape.label.clone(),
            flops: shape.flops,
            checked_against: shape.reference.clone(),
            references,
            rows,
            drift,
            same_code_gap,
        }
    }

    /// The work of one run, for headings: `0.134 GFLOP`, or for a memory-bound shape the
    /// bytes it must move, `32.0 MiB moved`.
    pub fn work(&self) -> String {
        match self.measure() {
            Measure::Flops => format!("{} GFLOP", super::charts::axes::sig3(self.flops / 1e9)),
            Measure::Bytes => format!(
                "{} moved",
                super::table::bytes(self.rows.first().map_or(0.0, |r| r.row.min_bytes) as u64)
            ),
        }
    }

    /// What this shape's speed is counted in.
    pub fn measure(&self) -> Measure {
        Measure::of(self.shape.workload())
    }

    /// The rows a chart or table of speeds shows: those that ran and passed.
    pub fn timed_rows(&self) -> impl Iterator<Item = &RowReport> {
        self.rows.iter().filter(|r| r.timed.is_some())
    }

    /// The stage crates of the rungs present, in ladder order (a chart's legend).
    pub fn stages(&self) -> Vec<Stage> {
        let mut v: Vec<Stage> = self.rows.iter().map(|r| r.row.stage).collect();
        v.sort();
        v.dedup();
        v
    }

    /// Where the traffic of the intensity figures comes from: the source every row with a
    /// count shares, or `None` when some rows have no count (then all use compulsory bytes).
    pub fn traffic_source(&self) -> Option<TrafficSource> {
        let mut sources = self
            .rows
            .iter()
            .filter(|r| r.timed.is_some() || r.row.passed())
            .map(|r| r.traffic_intensity.map(|(_, s)| s));
        let first = sources.next()??;
        sources.all(|s| s == Some(first)).then_some(first)
    }
}

impl RowReport {
    /// FLOP per byte where the roofline places this row (and judges it): its counted traffic's
    /// intensity where something counted it, else the compulsory one.
    pub fn intensity(&self) -> f64 {
        at_intensity(self.compulsory_intensity, self.traffic_intensity)
    }
}

fn at_intensity(compulsory: f64, counted: Option<(f64, TrafficSource)>) -> f64 {
    counted.map_or(compulsory, |(x, _)| x)
}

/// The `#` cell of a row.
pub fn tag(r: &Row) -> String {
    match r.role {
        Role::Rung => format!("{:02}", r.rung),
        Role::Reference => "ref".into(),
        Role::Peer => "peer".into(),
        Role::User => "user".into(),
    }
}

fn timed(shape: &ShapeResults, r: &Row) -> Option<Timed> {
    if r.status != Status::Passed {
        return None;
    }
    let t = r.timing.as_ref()?;
    let gflops = |ms: f64| shape.flops / (ms * 1e6);
    Some(Timed {
        median_ms: t.median_ms,
        p10_ms: t.p10_ms,
        p90_ms: t.p90_ms,
        spread_pct: t.spread_pct(),
        gflops: gflops(t.median_ms),
        gflops_lo: gflops(t.p90_ms),
        gflops_hi: gflops(t.p10_ms),
        gbps: r.min_bytes / (t.median_ms * 1e6),
    })
}

/// The reference row a row of `precision` is compared with: the library row of the same
/// arithmetic (cuBLAS SGEMM for FP32, cuBLAS TF32 for TF32, cuBLAS FP16/BF16 for those), so a
/// reduced-precision rung is judged against the tensor-core library at its own precision.
/// Where the table has no reference of that precision at all (the CPU has one peer crate,
/// FP32; no library row computes in FP8), the nearest that runs stands in: for FP8 the
/// FP16 tensor-core library, then FP32; a reference that exists but failed gives none.
pub fn reference_for(shape: &ShapeResults, precision: Precision) -> Option<usize> {
    let refs = || {
        shape
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.role == Role::Reference)
    };
    let usable = |(_, r): &(usize, &Row)| r.passed() && r.timing.is_some();
    let same = refs()
        .filter(|(_, r)| r.precision == precision)
        .min_by_key(|(_, r)| r.rung);
    if let Some(x) = same {
        return usable(&x).then_some(x.0);
    }
    let stand_ins: &[Precision] = match precision {
        Precision::Fp8 => &[Precision::Fp16, Precision::Fp32],
        _ => &[Precision::Fp32],
    };
    stand_ins.iter().find_map(|&p| {
        refs()
            .filter(|(_, r)| r.precision == p)
            .filter(usable)
            .min_by_key(|(_, r)| r.rung)
            .map(|(i, _)| i)
    })
}
