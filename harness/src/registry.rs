//! Every kernel the lab knows: the stage crates' rungs and the reference rows. Adding a rung is
//! one `.cu` file and one entry in its stage crate's `kernels()`.

use anyhow::{Result, bail};
use kernel::{Kernel, Role, Workload};

/// All kernels, each workload's ladder in rung order, references after the rungs.
pub fn all() -> Vec<Box<dyn Kernel>> {
    let mut all = stage_kernels();
    all.extend(networks::kernels());
    all.sort_by_key(|k| {
        let i = k.info();
        (i.workload, i.role == Role::Reference, i.rung, i.id)
    });
    all
}

/// The stage crates' kernels and the library rows: everything but the networks, which are
/// built from these.
pub fn stage_kernels() -> Vec<Box<dyn Kernel>> {
    let mut all: Vec<Box<dyn Kernel>> = Vec::new();
    all.extend(baseline::kernels());
    all.extend(restrict_unroll::kernels());
    all.extend(fusion::kernels());
    all.extend(tensorcore::kernels());
    all.extend(fp16::kernels());
    all.extend(flash_attn::kernels());
    all.extend(crate::library_rows::kernels());
    all
}

/// The kernels of `workload`, in table order.
pub fn for_workload(all: &[Box<dyn Kernel>], workload: Workload) -> Vec<&dyn Kernel> {
    all.iter()
        .filter(|k| k.info().workload == workload)
        .map(|k| k.as_ref())
        .collect()
}

/// The rung `k` changes, as its lineage declares it.
pub fn parent<'a>(all: &'a [Box<dyn Kernel>], k: &dyn Kernel) -> Option<&'a dyn Kernel> {
    let id = k.lineage()?.parent?;
    all.iter().find(|p| p.info().id == id).map(|p| p.as_ref())
}

/// Keeps the kernels named in `ids` (all of them when `ids` is empty); see [`find`].
pub fn select<'a>(all: &'a [Box<dyn Kernel>], ids: &[String]) -> Result<Vec<&'a dyn Kernel>> {
    if ids.is_empty() {
        return Ok(all.iter().map(|k| k.as_ref()).collect());
    }
    // A kernel named twice runs once.
    let mut out: Vec<&dyn Kernel> = Vec::new();
    for id in ids {
        let k = find(all, id.trim())?;
        if !out.iter().any(|o| o.info().id == k.info().id) {
            out.push(k);
        }
    }
    Ok(out)
}

/// The kernel named `id`. An unknown id is an error naming the closest ids (a typo, or a
/// part of an id such as `hoisted`), not all of them: `harness list` does that.
pub fn find<'a>(all: &'a [Box<dyn Kernel>], id: &str) -> Result<&'a dyn Kernel> {
    if let Some(k) = all.iter().find(|k| k.info().id == id) {
        return Ok(k.as_ref());
    }
    let ids: Vec<String> = all.iter().map(|k| k.info().id.to_string()).collect();
    let near = closest(&ids, id);
    if near.is_empty() {
        bail!(
            "unknown kernel {id:?}; `harness list` names all {}",
            all.len()
        )
    }
    bail!(
        "unknown kernel {id:?}; did you mean {}? (`harness list` names all {})",
        near.join(", "),
        all.len()
    )
}

/// At most five ids close to `wanted`: those containing it, then those a few edits away,
/// nearest first.
fn closest<'a>(ids: &'a [String], wanted: &str) -> Vec<&'a str> {
    let wanted = wanted.to_lowercase();
    let limit = (wanted.chars().count() / 3).max(2);
    let mut near: Vec<(usize, &str)> = ids
        .iter()
        .map(String::as_str)
        .filter_map(|id| {
            let d = if !wanted.is_empty() && id.contains(wanted.as_str()) {
                0
            } else {
                strsim::levenshtein(id, &wanted)
            };
            (d <= limit).then_some((d, id))
        })
        .collect();
    near.sort_by_key(|&(d, _)| d);
    near.into_iter().take(5).map(|(_, id)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn an_unknown_kernel_is_answered_with_the_closest_ids() {
        let all = all();
        assert_eq!(find(&all, "gemm-tiled").unwrap().info().id, "gemm-tiled");
        // `--kernels 'gemm-naive, gemm-tiled'`: the space after a comma is no part of a name.
        let ids = ["gemm-naive".to_string(), " gemm-tiled".to_string()];
        assert_eq!(select(&all, &ids).unwrap().len(), 2);
        let typo = find(&all, "gemm-tilde").err().unwrap().to_string();
        assert!(
            typo.starts_with("unknown kernel \"gemm-tilde\"; did you mean gemm-tiled"),
            "{typo}"
        );
        let part = find(&all, "HOISTED").err().unwrap().to_string();
        assert!(
            part.contains("did you mean gemm-mma-hoisted, encoder-gemm-mma-hoisted?"),
            "{part}"
        );
        let none = find(&all, "sgemm-of-my-own").err().unwrap().to_string();
        assert_eq!(
            none,
            format!(
                "unknown kernel \"sgemm-of-my-own\"; `harness list` names all {}",
                all.len()
            )
        );
        let picked = select(&all, &["gemm-naive".into(), "attn-naive".into()]).unwrap();
        assert_eq!(picked.len(), 2);
        assert!(select(&all, &["gemm-naive".into(), "attn-nave".into()]).is_err());
    }

    #[test]
    fn ids_are_unique_and_ladders_are_ordered() {
        let all = all();
        let ids: HashSet<_> = all.iter().map(|k| k.info().id).collect();
        assert_eq!(ids.len(), all.len(), "duplicate kernel ids");
        for w in Workload::ALL {
            let rungs: Vec<u32> = for_workload(&all, w)
                .iter()
                .filter(|k| k.info().role == Role::Rung)
                .map(|k| k.info().rung)
                .collect();
            let mut sorted = rungs.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(
                rungs, sorted,
                "{w}: rung numbers must be unique and ascending"
            );
        }
    }

    #[test]
    fn every_rung_declares_a_parent_of_its_own_ladder() {
        let all = all();
        for k in &all {
            let i = k.info();
            let Some(l) = k.lineage() else {
                assert_ne!(i.role, Role::Rung, "{}: a rung without lineage", i.id);
                continue;
            };
            assert_eq!(i.role, Role::Rung, "{}: only rungs have a lineage", i.id);
            assert!(!l.idea.is_empty(), "{}: no idea", i.id);
            let first = for_workload(&all, i.workload)
                .iter()
                .filter(|k| k.info().role == Role::Rung)
                .map(|k| k.info().rung)
                .min();
            match parent(&all, k.as_ref()) {
                Some(p) => {
                    let pi = p.info();
                    assert_eq!(
                        pi.workload, i.workload,
                        "{}: parent in another ladder",
                        i.id
                    );
                    assert_eq!(pi.role, Role::Rung, "{}: parent is not a rung", i.id);
                    assert!(pi.rung < i.rung, "{}: parent comes after it", i.id);
                }
                None => {
                    assert_eq!(l.parent, None, "{}: unknown parent {:?}", i.id, l.parent);
                    assert_eq!(
                        Some(i.rung),
                        first,
                        "{}: only a first rung has no parent",
                        i.id
                    );
                    assert_eq!(l.bound, None, "{}: a first rung attacks nothing", i.id);
                }
            }
        }
    }
}
