//! Two networks built from the ladders' kernels, as workloads: each row is the whole forward
//! pass with one choice of its main operator's rung (the convolution for the CNN; the GEMM or
//! the attention for the encoder block), every other layer fixed. Rows run, validate and
//! time like any kernel's; the harness adds the time by category and Amdahl's prediction for
//! each swap. The layers are defined in `kernel::network`; the glue between them (a GEMM
//! rung's epilogue, the heads' layout) is this crate's own [`glue`].

mod cnn;
mod encoder;
pub mod glue;

use kernel::network::Graph;
use kernel::{
    AcceptedSpill, CudaPlan, Kernel, KernelInfo, Lineage, Precision, Role, Shape, Unsupported,
    Workload,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The operator a network row swaps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Conv,
    Gemm,
    Attention,
}

impl Slot {
    fn workload(self) -> Workload {
        match self {
            Self::Conv => Workload::Conv,
            Self::Gemm => Workload::Gemm,
            Self::Attention => Workload::Attention,
        }
    }

    /// The breakdown's category of the operator.
    pub fn category(self) -> kernel::network::Category {
        use kernel::network::Category;
        match self {
            Self::Conv => Category::Convolution,
            Self::Gemm => Category::Gemm,
            Self::Attention => Category::Attention,
        }
    }
}

/// The kernels a network's layers use, by id, owned by the row.
pub struct Parts {
    kernels: Vec<Box<dyn Kernel>>,
}

impl Parts {
    fn get(&self, id: &str) -> Result<&dyn Kernel, Unsupported> {
        self.kernels
            .iter()
            .find(|k| k.info().id == id)
            .map(|k| k.as_ref())
            .ok_or_else(|| Unsupported(format!("the network needs kernel {id}, which is missing")))
    }
}

/// One row of a network's table: the network with `choice` in each slot.
pub struct NetworkRow {
    info: KernelInfo,
    lineage: Lineage,
    /// The rung in each slot the network has.
    choice: Vec<(Slot, &'static str)>,
    swapped: Option<&'static str>,
    parts: Arc<Parts>,
    graphs: Mutex<HashMap<Shape, Arc<Graph>>>,
}

impl NetworkRow {
    /// The network's layers at `shape`.
    pub fn graph(&self, shape: &Shape) -> Result<Arc<Graph>, Unsupported> {
        let mut cache = self.graphs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(g) = cache.get(shape) {
            return Ok(g.clone());
        }
        let pick = |slot: Slot| {
            let id = self
                .choice
                .iter()
                .find(|(s, _)| *s == slot)
                .map(|(_, id)| *id)
                .expect("every slot of the network is chosen");
            self.parts.get(id)
        };
        let g = Arc::new(match *shape {
            Shape::Cnn { .. } => cnn::graph(shape, pick(Slot::Conv)?, &self.parts)?,
            Shape::Encoder { .. } => encoder::graph(
                shape,
                pick(Slot::Gemm)?,
                pick(Slot::Attention)?,
                &self.parts,
            )?,
            other => unreachable!("a network row was given {other}"),
        });
        cache.insert(*shape, g.clone());
        Ok(g)
    }

    /// The rung each slot holds.
    pub fn choice(&self) -> &[(Slot, &'static str)] {
        &self.choice
    }

    /// The rung this row swaps in over its parent row (`None`: it is the first row).
    pub fn swapped(&self) -> Option<(Slot, &'static str)> {
        let id = self.swapped?;
        self.choice.iter().copied().find(|c| c.1 == id)
    }
}

impl Kernel for NetworkRow {
    fn info(&self) -> KernelInfo {
        self.info.clone()
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        self.graph(shape).map(|_| ())
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let g = self.graph(shape).ok()?;
        g.compose().ok().map(|c| c.plan)
    }

    /// A network has no single CPU port: its forward pass runs its layers' ports.
    fn has_cpu(&self) -> bool {
        let probe = self.info.workload.probe_shape();
        self.graph(&probe).is_ok_and(|g| g.has_cpu())
    }

    fn run_cpu(
        &self,
        shape: &Shape,
        inputs: &[&[f32]],
        out: &mut [f32],
    ) -> Result<(), Unsupported> {
        self.graph(shape)?.forward_cpu(inputs, out).map(|_| ())
    }

    fn lineage(&self) -> Option<Lineage> {
        Some(self.lineage)
    }

    /// The spill a rung in one of the row's slots accepts, for its launches in the pass.
    fn accepted_spill(&self) -> Option<AcceptedSpill> {
        self.choice
            .iter()
            .find_map(|(_, id)| self.parts.get(id).ok()?.accepted_spill())
    }

    fn gpu_only(&self) -> Option<&'static str> {
        let probe = self.info.workload.probe_shape();
        self.choice
            .iter()
            .find_map(|(_, id)| self.parts.get(id).ok()?.gpu_only())
            .or_else(|| {
                let g = self.graph(&probe).ok()?;
                g.layers
                    .iter()
                    .find_map(|l| self.parts.get(l.rung.as_deref()?).ok()?.gpu_only())
            })
    }
}

/// The precision a row is judged by: the loosest of its rungs'.
fn loosest(ps: impl Iterator<Item = Precision>) -> Precision {
    ps.max_by(Precision::cmp_looseness)
        .unwrap_or(Precision::Fp32)
}

/// A string that lives as long as the program (ids and ideas of the rows, built once).
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The stage crates' kernels a network's layers may use.
fn parts() -> Vec<Box<dyn Kernel>> {
    let mut all: Vec<Box<dyn Kernel>> = Vec::new();
    all.extend(baseline::kernels());
    all.extend(restrict_unroll::kernels());
    all.extend(fusion::kernels());
    all.extend(tensorcore::kernels());
    all.extend(fp16::kernels());
    all.extend(flash_attn::kernels());
    all
}

/// The rows of both networks, each owning a copy of the stage crates' kernels it is built
/// from.
pub fn rows() -> Vec<NetworkRow> {
    static ROWS: std::sync::OnceLock<Vec<RowSpec>> = std::sync::OnceLock::new();
    let parts = Arc::new(Parts { kernels: parts() });
    let specs = ROWS.get_or_init(|| row_specs(&parts));
    specs
        .iter()
        .map(|s| {
            let precision = loosest(
                s.choice
                    .iter()
                    .filter_map(|(_, id)| parts.get(id).ok())
                    .map(|k| k.info().precision),
            );
            NetworkRow {
                info: KernelInfo {
                    id: s.id.into(),
                    workload: s.workload,
                    stage: kernel::Stage::Networks,
                    precision,
                    role: Role::Rung,
                    rung: s.rung,
                    summary: s.summary.into(),
                },
                lineage: s.lineage,
                choice: s.choice.clone(),
                swapped: s.swapped,
                parts: parts.clone(),
                graphs: Mutex::new(HashMap::new()),
            }
        })
        .collect()
}

/// [`rows`] as kernels, for the harness's registry.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    rows()
        .into_iter()
        .map(|r| Box::new(r) as Box<dyn Kernel>)
        .collect()
}

struct RowSpec {
    id: &'static str,
    workload: Workload,
    rung: u32,
    summary: &'static str,
    lineage: Lineage,
    choice: Vec<(Slot, &'static str)>,
    swapped: Option<&'static str>,
}

/// The rungs of `slot`'s ladder a network can take: every rung with a plan that keeps its
/// input on the device (a batch pipeline from host memory cannot sit inside a network).
fn ladder(parts: &Parts, slot: Slot) -> Vec<&'static str> {
    let w = slot.workload();
    let mut rungs: Vec<(u32, &'static str)> = parts
        .kernels
        .iter()
        .filter(|k| {
            let i = k.info();
            i.workload == w
                && i.role == Role::Rung
                && k.cuda(&w.probe_shape())
                    .is_none_or(|p| p.pipeline.is_none())
        })
        .map(|k| (k.info().rung, leak(k.info().id.to_string())))
        .collect();
    rungs.sort();
    rungs.into_iter().map(|(_, id)| id).collect()
}

fn row_specs(parts: &Parts) -> Vec<RowSpec> {
    let mut out = Vec::new();
    let mut push =
        |workload: Workload, choice: Vec<(Slot, &'static str)>, swapped: Option<&'static str>| {
            let rung = out
                .iter()
                .filter(|r: &&RowSpec| r.workload == workload)
                .count() as u32
                + 1;
            let net = workload.name();
            let names: Vec<&str> = choice.iter().map(|(_, id)| *id).collect();
            let (id, parent, idea) = match swapped {
                None => (
                    format!("{net}-{}", names[0]),
                    None,
                    format!(
                        "the network with the first rung of each swapped ladder: {}",
                        names.join(" and ")
                    ),
                ),
                Some(id) => {
                    // The row this one changes: the same rungs in every other slot, the
                    // first rung of the swapped one (the first row, for a GEMM swap).
                    let first = out.iter().find(|r: &&RowSpec| r.workload == workload);
                    let slot = choice.iter().find(|(_, c)| *c == id).map(|(s, _)| *s);
                    let parent = out.iter().find(|r: &&RowSpec| {
                        r.workload == workload
                            && r.choice.iter().all(|(s, c)| {
                                if Some(*s) == slot {
                                    first.is_some_and(|f| f.choice.contains(&(*s, *c)))
                                } else {
                                    choice.contains(&(*s, *c))
                                }
                            })
                    });
                    let parent = parent.or(first).map(|r| r.id);
                    let over = match parent {
                        Some(p) if Some(p) != first.map(|f| f.id) => format!(" over `{p}`"),
                        _ => String::new(),
                    };
                    (
                        format!("{net}-{id}"),
                        parent,
                        format!("`{id}` swapped in{over}, every other layer unchanged"),
                    )
                }
            };
            let summary = format!(
                "the whole {} with {}",
                match workload {
                    Workload::Cnn => "CNN",
                    _ => "encoder block",
                },
                choice
                    .iter()
                    .map(|(s, id)| format!("{id} ({})", s.workload().name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            out.push(RowSpec {
                id: leak(id),
                workload,
                rung,
                summary: leak(summary),
                lineage: Lineage {
                    parent,
                    idea: leak(idea),
                    bound: None,
                },
                choice,
                swapped,
            });
        };
    let convs = ladder(parts, Slot::Conv);
    for (i, &c) in convs.iter().enumerate() {
        push(Workload::Cnn, vec![(Slot::Conv, c)], (i > 0).then_some(c));
    }
    let (gemms, attns) = (ladder(parts, Slot::Gemm), ladder(parts, Slot::Attention));
    if let (Some(&g0), Some(&a0)) = (gemms.first(), attns.first()) {
        push(
            Workload::Encoder,
            vec![(Slot::Gemm, g0), (Slot::Attention, a0)],
            None,
        );
        for &g in &gemms[1..] {
            push(
                Workload::Encoder,
                vec![(Slot::Gemm, g), (Slot::Attention, a0)],
                Some(g),
            );
        }
        let g = gemms
            .iter()
            .copied()
            .find(|&g| g == ATTENTION_ROWS_GEMM)
            .unwrap_or(g0);
        for &a in &attns[1..] {
            push(
                Workload::Encoder,
                vec![(Slot::Gemm, g), (Slot::Attention, a)],
                Some(a),
            );
        }
    }
    out
}

/// The GEMM rung under the encoder's attention swaps. Over the first GEMM rung the
/// projections take almost all of the block's time and no attention rung moves the total.
/// This is the FP32 ladder's last rung before tuning: no tensor cores, so the projections
/// keep the reference's precision, and no tuning file, so every device runs the same code.
pub const ATTENTION_ROWS_GEMM: &str = "gemm-double-buffer";
