//! Every kernel the lab knows: the stage crates' rungs and the reference rows. Adding a rung is
//! one `.cu` file and one entry in its stage crate's `kernels()`.

use anyhow::{Result, bail};
use kernel::{Kernel, Role, Workload};

/// All kernels, each workload's ladder in rung order, references after the rungs.
pub fn all() -> Vec<Box<dyn Kernel>> {
    let mut all: Vec<Box<dyn Kernel>> = Vec::new();
    all.extend(baseline::kernels());
    all.extend(restrict_unroll::kernels());
    all.extend(fusion::kernels());
    all.extend(tensorcore::kernels());
    all.extend(fp16::kernels());
    all.extend(flash_attn::kernels());
    all.extend(crate::library_rows::kernels());
    all.sort_by_key(|k| {
        let i = k.info();
        (i.workload, i.role == Role::Reference, i.rung, i.id)
    });
    all
}

/// The kernels of `workload`, in table order.
pub fn for_workload(all: &[Box<dyn Kernel>], workload: Workload) -> Vec<&dyn Kernel> {
    all.iter()
        .filter(|k| k.info().workload == workload)
        .map(|k| k.as_ref())
        .collect()
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
    fn unknown_kernels_list_the_valid_ones() {
        let all = all();
        let e = select(&all, &["gemm-magic".to_string()])
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains("gemm-naive") && e.contains("gemm-magic"), "{e}");
    }
}
