//! The pages of the user's kernels a run ran (`--kernel`, `[[kernel]]`): each kernel loaded
//! again from the file the run recorded and documented as a rung is ([`explain_cache::docs`]),
//! with the option that ran it and the command that sets it beside a rung. Where the file is
//! gone or changed since the run, the page says so and shows the kernel's rows only: a page
//! describing another kernel than the one measured would mislead.

use super::Explain;
use super::explain_cache::{self, CachedBlock, CachedDoc, Extra, Extras, RungDoc};
use crate::results::RunResults;
use crate::runs::LabDir;
use crate::{registry, sol};
use kernel::DeviceKind;

/// The document of each user kernel of `run`, in the run's order, by row id.
pub fn docs(run: &RunResults, mode: Explain, lab: &LabDir) -> Vec<(String, RungDoc)> {
    let ran = |id: &str| {
        run.workloads
            .iter()
            .flat_map(|w| &w.shapes)
            .flat_map(|s| &s.rows)
            .any(|r| r.id == id)
    };
    let records: Vec<_> = run.user_kernels.iter().filter(|r| ran(&r.id)).collect();
    if records.is_empty() {
        return Vec::new();
    }
    // Launched as on the H100 the estimate models, as `harness explain --kernel` does.
    let sms = sol::h100::SMS as usize;
    let mut all = registry::all();
    let mut loaded = Vec::new();
    let mut sized_by_sms = Vec::new();
    let mut extras = Extras {
        sizes_from: "a shape the run checked it at in the simulator",
        ..Extras::default()
    };
    let mut out = Vec::new();
    for r in &records {
        match r.load(sms) {
            Ok(k) => {
                if k.uses_sms() {
                    sized_by_sms.push(r.id.clone());
                }
                let extra = Extra {
                    shown: k.as_written().ok(),
                    ..Extra::default()
                };
                extras.by_id.insert(r.id.clone(), extra);
                loaded.push(r.id.clone());
                all.push(Box::new(k));
            }
            Err(why) => out.push((
                r.id.clone(),
                RungDoc {
                    doc: CachedDoc {
                        title: format!("{} (your {} kernel)", r.id, r.workload),
                        sections: vec![(
                            "Lineage".into(),
                            vec![
                                CachedBlock::Text(format!(
                                    "Your kernel, run with the option below; this page cannot \
                                     show its code: {why}."
                                )),
                                CachedBlock::Code(
                                    "text".into(),
                                    format!("--kernel {}", r.option()),
                                ),
                            ],
                        )],
                    },
                    complete: true,
                },
            )),
        }
    }
    // A simulator run's shapes are ones the simulator can count banks at, and the kernel's
    // own: those it passed at come first (a kernel may assume sizes the default shapes lack).
    if run.device.kind == DeviceKind::Sim.name() {
        for w in &run.workloads {
            for s in &w.shapes {
                for r in s
                    .rows
                    .iter()
                    .filter(|r| r.passed() && loaded.contains(&r.id))
                {
                    if let Some(e) = extras.by_id.get_mut(&r.id) {
                        e.sizes.push(s.shape);
                    }
                }
            }
        }
    }
    for (id, mut d) in explain_cache::docs(&all, &loaded, &extras, mode, lab) {
        let Some(r) = records.iter().find(|r| r.id == id) else {
            continue;
        };
        let mut note = vec![
            CachedBlock::Text("Run with this option:".into()),
            CachedBlock::Code("text".into(), format!("--kernel {}", r.option())),
        ];
        if r.against().is_none() {
            note.extend([
                CachedBlock::Text(
                    "Beside a rung of the lab (the diff of the two sources, their resources, \
                     SASS and bank counts side by side), as the option `against=RUNG` sets it in \
                     a run:"
                        .into(),
                ),
                CachedBlock::Code(
                    "text".into(),
                    format!("{} --against RUNG", r.explain_command()),
                ),
            ]);
        }
        if sized_by_sms.contains(&id) {
            note.push(CachedBlock::Text(format!(
                "In the sections above `SMS` is {sms}, the SM count of the H100 the estimate \
                 models, except in the bank counts, where it is the simulator's {}; the rows of \
                 the run had the run's own.",
                crate::user_kernel::SIM_SMS
            )));
        }
        if let Some((_, blocks)) = d.doc.sections.iter_mut().find(|(t, _)| t == "Lineage") {
            blocks.extend(note);
        }
        out.push((id, d));
    }
    // The run's order.
    out.sort_by_key(|(id, _)| records.iter().position(|r| &r.id == id));
    out
}
