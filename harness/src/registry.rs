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

/// Keeps the kernels named in `ids`; an unknown id is an error that lists the valid ones.
pub fn select<'a>(all: &'a [Box<dyn Kernel>], ids: &[String]) -> Result<Vec<&'a dyn Kernel>> {
    if ids.is_empty() {
        return Ok(all.iter().map(|k| k.as_ref()).collect());
    }
    let mut out = Vec::new();
    for id in ids {
        match all.iter().find(|k| k.info().id == id.as_str()) {
            Some(k) => out.push(k.as_ref()),
            None => bail!(
                "unknown kernel {id:?}; valid kernels: {}",
                all.iter()
                    .map(|k| k.info().id)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

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

    #[test]
    fn unknown_kernels_list_the_valid_ones() {
        let all = all();
        let e = select(&all, &["gemm-magic".to_string()])
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains("gemm-naive") && e.contains("gemm-magic"), "{e}");
    }
}
