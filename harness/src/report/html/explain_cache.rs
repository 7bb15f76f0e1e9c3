//! `harness explain`'s document of each rung, cached under the lab folder
//! (`<lab>/explain/<key>.json`). The key hashes everything the document depends on: the rung's
//! and its parent's plans at the compiled shape (sources, defines, launches), the NVRTC
//! version, the disassembler found, and the code that builds the document; a change to any of
//! them misses the cache and the document is computed again. Computing one takes NVRTC and
//! nvdisasm several seconds, so only [`Explain::Compute`] does it, rungs in parallel.

use super::Explain;
use crate::cmd::explain::{self, Block, Doc};
use crate::registry;
use crate::runs::LabDir;
use kernel::cuda::nvrtc;
use kernel::{Kernel, Shape};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A block of the document, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum CachedBlock {
    Text(String),
    Code(String, String),
    Table(Vec<String>, Vec<Vec<String>>),
}

/// The document of one rung, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedDoc {
    pub title: String,
    pub sections: Vec<(String, Vec<CachedBlock>)>,
}

/// A rung's document and whether it is whole (else: lineage and diff only, no compiler).
#[derive(Debug, Clone)]
pub struct RungDoc {
    pub doc: CachedDoc,
    pub complete: bool,
}

/// The sections that depend on a run: the page shows the run's own rows instead.
const RUN_SECTIONS: [&str; 1] = ["Measured"];

impl From<Doc> for CachedDoc {
    fn from(d: Doc) -> Self {
        Self {
            title: d.title,
            sections: d
                .sections
                .into_iter()
                .filter(|(t, _)| !RUN_SECTIONS.contains(&t.as_str()))
                .map(|(t, blocks)| {
                    let blocks = blocks
                        .into_iter()
                        .map(|b| match b {
                            Block::Text(s) => CachedBlock::Text(s),
                            Block::Code(lang, s) => CachedBlock::Code(lang.to_string(), s),
                            Block::Table(h, r) => CachedBlock::Table(h, r),
                        })
                        .collect();
                    (t, blocks)
                })
                .collect(),
        }
    }
}

/// What some kernels' documents take beyond the kernel (a user's kernels'), by id.
#[derive(Debug, Default)]
pub struct Extras {
    pub by_id: BTreeMap<String, Extra>,
    /// Where the shapes of [`Extra::sizes`] come from, in words.
    pub sizes_from: &'static str,
}

#[derive(Debug, Default)]
pub struct Extra {
    /// Shapes to count the banks at first.
    pub sizes: Vec<Shape>,
    /// The source the diff shows for the kernel, where it is not its plan's (a user's file as
    /// written, which the plan's unit includes).
    pub shown: Option<String>,
}

impl Extras {
    fn of(&self, id: &str) -> (&[Shape], Option<&str>) {
        self.by_id
            .get(id)
            .map_or((&[], None), |e| (&e.sizes, e.shown.as_deref()))
    }
}

/// FNV-1a, 64 bits: stable across builds and Rust versions, unlike the std hasher.
fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The code that builds the document: a change to it changes every key. Besides explain's
/// own, the speed-of-light model, and the simulator's bank model with the shapes it runs at.
const DOC_CODE: [&str; 8] = [
    include_str!("../../cmd/explain/mod.rs"),
    include_str!("../../cmd/explain/speed_of_light.rs"),
    include_str!("../../sass.rs"),
    include_str!("../../resources.rs"),
    include_str!("../../sol.rs"),
    include_str!("../../../ablation.toml"),
    include_str!("../../../../kernel/sim/include/sim_banks.h"),
    include_str!("../../../../kernel/sim/include/sim_traffic.h"),
];

/// The tools the document comes from.
fn tools() -> String {
    format!(
        "{:?} {:?}",
        nvrtc::version().map_err(|e| e.to_string()),
        crate::sass::Disassembler::find().map_err(|e| e.to_string())
    )
}

/// The cache key of `k`'s document, its banks counted at `sizes` first and `shown` as its
/// source.
pub fn key(
    all: &[Box<dyn Kernel>],
    k: &dyn Kernel,
    tools: &str,
    (sizes, shown): (&[Shape], Option<&str>),
) -> u64 {
    let plan = |k: &dyn Kernel| {
        let (_, shape) = explain::shape_of(k);
        format!("{shape:?} {:?}", k.cuda(&shape))
    };
    let parent = registry::parent(all, k);
    let mut parts = vec![
        env!("CARGO_PKG_VERSION").to_string(),
        k.info().id.to_string(),
        plan(k),
        parent.map(|p| p.info().id.to_string()).unwrap_or_default(),
        parent.map(plan).unwrap_or_default(),
        tools.to_string(),
    ];
    parts.extend(DOC_CODE.iter().map(|c| c.to_string()));
    if !sizes.is_empty() {
        parts.push(format!("{sizes:?}"));
    }
    parts.extend(shown.map(str::to_string));
    fnv(&parts.iter().map(String::as_str).collect::<Vec<_>>())
}

fn path(lab: &LabDir, key: u64) -> PathBuf {
    lab.path().join("explain").join(format!("{key:016x}.json"))
}

fn load(lab: &LabDir, key: u64) -> Option<CachedDoc> {
    let text = std::fs::read_to_string(path(lab, key)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Stores a document; a cache that cannot be written only costs time later.
fn store(lab: &LabDir, key: u64, doc: &CachedDoc) {
    let p = path(lab, key);
    if let Some(dir) = p.parent()
        && std::fs::create_dir_all(dir).is_ok()
        && let Ok(text) = serde_json::to_string(doc)
    {
        let _ = crate::output::write_atomic(&p, text);
    }
}

/// What needs no compiler: the lineage and the source diff against the parent (`shown` in
/// the kernel's place where given).
pub fn partial(all: &[Box<dyn Kernel>], k: &dyn Kernel, shown: Option<&str>) -> CachedDoc {
    let parent = registry::parent(all, k);
    let (_, shape) = explain::shape_of(k);
    let plan = explain::plan_of(k, &shape);
    let parent_plan = parent.and_then(|p| explain::plan_of(p, &shape));
    let doc = Doc {
        title: explain::title(k),
        sections: vec![
            ("Lineage".into(), explain::lineage(k, parent)),
            (
                explain::diff_title(k, parent),
                explain::diff(k, parent, &plan, &parent_plan, shown),
            ),
        ],
    };
    doc.into()
}

/// The document of each rung of `ids`, in order: from the cache, else computed (`Compute`) or
/// partial (`Cached`), each with its [`Extras`].
pub fn docs(
    all: &[Box<dyn Kernel>],
    ids: &[String],
    extras: &Extras,
    mode: Explain,
    lab: &LabDir,
) -> Vec<(String, RungDoc)> {
    let tools = tools();
    let kernels: Vec<(&String, Option<&dyn Kernel>)> = ids
        .iter()
        .map(|id| {
            (
                id,
                all.iter()
                    .find(|k| k.info().id == id.as_str())
                    .map(|k| k.as_ref()),
            )
        })
        .collect();
    let one = |(id, k): &(&String, Option<&dyn Kernel>)| -> (String, RungDoc) {
        let Some(k) = k else {
            // A rung of an older build: the run has its rows, this build has no source.
            let doc = CachedDoc {
                title: id.to_string(),
                sections: vec![(
                    "Lineage".into(),
                    vec![CachedBlock::Text(format!(
                        "{id} is not in this build's registry: no source to explain."
                    ))],
                )],
            };
            return (
                id.to_string(),
                RungDoc {
                    doc,
                    complete: true,
                },
            );
        };
        let (sizes, shown) = extras.of(id);
        let key = key(all, *k, &tools, (sizes, shown));
        if let Some(doc) = load(lab, key) {
            return (
                id.to_string(),
                RungDoc {
                    doc,
                    complete: true,
                },
            );
        }
        match mode {
            Explain::Compute => {
                let parent = registry::parent(all, *k);
                let sizes = explain::BankSizes {
                    shapes: sizes,
                    from: extras.sizes_from,
                };
                let doc: CachedDoc =
                    explain::explain_beside(all, *k, parent, shown, sizes, None, false).into();
                store(lab, key, &doc);
                (
                    id.to_string(),
                    RungDoc {
                        doc,
                        complete: true,
                    },
                )
            }
            Explain::Cached => (
                id.to_string(),
                RungDoc {
                    doc: partial(all, *k, shown),
                    complete: false,
                },
            ),
        }
    };
    match mode {
        Explain::Compute => kernels.par_iter().map(one).collect(),
        Explain::Cached => kernels.iter().map(one).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_follows_the_source_and_the_tools() {
        let all = registry::all();
        let k = all
            .iter()
            .find(|k| k.info().id == "gemm-tiled")
            .expect("gemm-tiled is registered");
        let a = key(&all, k.as_ref(), "tools A", (&[], None));
        assert_eq!(a, key(&all, k.as_ref(), "tools A", (&[], None)));
        assert_ne!(a, key(&all, k.as_ref(), "tools B", (&[], None)));
        // Banks counted at other shapes make another document.
        let at = [kernel::Shape::Gemm {
            m: 64,
            n: 64,
            k: 64,
        }];
        assert_ne!(a, key(&all, k.as_ref(), "tools A", (&at, None)));
        let other = all
            .iter()
            .find(|k| k.info().id == "gemm-naive")
            .expect("gemm-naive is registered");
        assert_ne!(a, key(&all, other.as_ref(), "tools A", (&[], None)));
    }

    #[test]
    fn a_stored_document_reads_back() {
        let dir = std::env::temp_dir().join(format!("lab-explain-cache-{}", std::process::id()));
        let lab = LabDir::at(&dir);
        let doc = CachedDoc {
            title: "t".into(),
            sections: vec![(
                "s".into(),
                vec![
                    CachedBlock::Text("x".into()),
                    CachedBlock::Code("diff".into(), "+a\n-b\n".into()),
                    CachedBlock::Table(vec!["h".into()], vec![vec!["1".into()]]),
                ],
            )],
        };
        store(&lab, 7, &doc);
        assert_eq!(load(&lab, 7), Some(doc));
        assert_eq!(load(&lab, 8), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
