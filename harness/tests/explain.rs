//! `harness explain`: every kernel of `harness list` is explained, with every section, from
//! NVRTC and nvdisasm (tools/install-cuda-tools.sh), not a GPU; without them these tests fail.

use harness::cmd::explain::{self, Block};
use std::process::Command;

const SECTIONS: [&str; 6] = [
    "Lineage",
    "Source diff against the parent",
    "Resources",
    "SASS instruction mix",
    "Speed of light on an H100",
    "Measured",
];

/// The rows of the first table of a section.
fn table<'a>(doc: &'a explain::Doc, title: &str) -> Option<&'a Vec<Vec<String>>> {
    let (_, blocks) = doc.sections.iter().find(|(t, _)| t == title)?;
    blocks.iter().find_map(|b| match b {
        Block::Table(_, rows) => Some(rows),
        _ => None,
    })
}

fn text_of(doc: &explain::Doc, title: &str) -> String {
    let (_, blocks) = doc.sections.iter().find(|(t, _)| t == title).unwrap();
    blocks
        .iter()
        .map(|b| match b {
            Block::Text(t) | Block::Code(_, t) => t.clone(),
            Block::Table(..) => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_kernel_is_explained_with_every_section() {
    let all = harness::registry::all();
    assert!(!all.is_empty());
    for k in &all {
        let id = k.info().id.to_string();
        let doc = explain::explain(&all, k.as_ref(), None, true);
        assert_eq!(doc.titles(), SECTIONS, "{id}");
        let md = doc.markdown();
        for s in SECTIONS {
            assert!(md.contains(&format!("#### {s}\n")), "{id}: no {s} in\n{md}");
            assert!(doc.text().contains(&format!("== {s}\n")), "{id}: no {s}");
        }
        let lineage = text_of(&doc, "Lineage");
        match k.lineage() {
            Some(l) => {
                assert!(lineage.contains(l.idea), "{id}: {lineage}");
                if let Some(p) = l.parent {
                    assert!(lineage.contains(p), "{id}: {lineage}");
                }
            }
            None => assert!(lineage.contains("Not a rung"), "{id}: {lineage}"),
        }
        let shape = kernel::Kernel::cuda(k.as_ref(), &first_shape(k.info().workload));
        let has_cu = shape.is_some_and(|p| p.launches().next().is_some());
        if !has_cu {
            assert!(
                text_of(&doc, "Source diff against the parent").contains("No CUDA source"),
                "{id}"
            );
            continue;
        }
        // The rung's own rows are there: compiled for at least one architecture, and its SASS.
        for section in ["Resources", "SASS instruction mix"] {
            let rows = table(&doc, section).unwrap_or_else(|| panic!("{id}: {section}"));
            assert!(
                rows.iter().any(|r| r[0] == id),
                "{id}: no row of its own in {section}: {rows:?}\n{}",
                text_of(&doc, section)
            );
        }
        let diff = text_of(&doc, "Source diff against the parent");
        let parent_has_cu = harness::registry::parent(&all, k.as_ref()).is_some_and(|p| {
            kernel::Kernel::cuda(p, &first_shape(p.info().workload))
                .is_some_and(|pl| pl.launches().next().is_some())
        });
        if parent_has_cu {
            assert!(
                diff.contains("+++ ") || diff.contains("identical"),
                "{id}: no diff against its parent:\n{diff}"
            );
        }
    }
}

fn first_shape(w: kernel::Workload) -> kernel::Shape {
    // The shape explain compiles at is inspect's first; the tests only need one with a plan.
    match w {
        kernel::Workload::Gemm => kernel::Shape::square_gemm(4096),
        kernel::Workload::Linear => kernel::Shape::Linear {
            m: 8192,
            n: 4096,
            k: 4096,
            act: kernel::Activation::Gelu,
        },
        kernel::Workload::Conv => kernel::Shape::Conv {
            b: 1000,
            c: 4,
            m: 16,
            h: 40,
            w: 40,
            k: 7,
        },
        kernel::Workload::Attention => kernel::Shape::Attention {
            b: 4,
            h: 16,
            s: 1024,
            d: 64,
            causal: false,
        },
        kernel::Workload::Eltwise => kernel::Shape::Eltwise { m: 8192, n: 4096 },
        kernel::Workload::Rbf => kernel::Shape::Rbf { n: 131_072, k: 64 },
    }
}

#[test]
fn the_command_prints_markdown_and_names_unknown_rungs() {
    let bin = env!("CARGO_BIN_EXE_harness");
    let o = Command::new(bin)
        .args(["explain", "gemm-tiled", "--markdown"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.starts_with("### gemm-tiled"), "{out}");
    assert!(
        out.contains("```diff\n--- gemm-naive\n+++ gemm-tiled"),
        "{out}"
    );
    let o = Command::new(bin)
        .args(["explain", "gemm-nonexistent"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("valid kernels"));
}
