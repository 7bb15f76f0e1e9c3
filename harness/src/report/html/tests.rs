//! The pages without a browser: every link lands on a file and anchor that exist, every rung
//! of the run has its page, every table a row per row of the run, every chart is there, and a
//! run's pages stay within their size budget.

use super::check::{self, Site};
use super::*;
use crate::report::charts;
use crate::report::charts::tests::{cpu, ladder, sim};
use crate::results::RunResults;

fn written(name: &str, run: &RunResults) -> (PathBuf, Report) {
    let dir = std::env::temp_dir().join(format!("lab-html-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let lab = LabDir::at(dir.join("lab"));
    let report = Report::new(run);
    write(&report, &dir, Explain::Cached, &lab).unwrap();
    (dir, report)
}

/// The three kinds of run, each written under a name of its own per test (tests run in
/// parallel).
fn each_run(test: &str) -> Vec<(String, RunResults)> {
    [("gpu", ladder()), ("cpu", cpu()), ("sim", sim())]
        .into_iter()
        .map(|(k, r)| (format!("{test}-{k}"), r))
        .collect()
}

#[test]
fn every_link_resolves_to_a_page_and_anchor_that_exist() {
    for (name, run) in each_run("links") {
        let (dir, _) = written(&name, &run);
        let site = Site::read(&dir).unwrap();
        assert!(site.pages.len() > 3, "{name}: {:?}", site.pages.keys());
        let broken = site.broken_links();
        assert!(broken.is_empty(), "{name}: broken links {broken:#?}");
        // Every page is reachable from the run page.
        let unreached = site.unreached(INDEX);
        assert!(
            unreached.is_empty(),
            "{name}: no link reaches {unreached:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn every_rung_has_a_page_and_every_table_a_row_per_row() {
    for (name, run) in each_run("rungs") {
        let (dir, report) = written(&name, &run);
        let rungs = rungs_of(&report);
        assert!(!rungs.is_empty());
        let all = crate::registry::all();
        for id in &rungs {
            let page = dir.join(PAGES).join(rung_page(id));
            let html = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{page:?}: {e}"));
            assert!(html.contains(&format!("<h1>{id}</h1>")), "{page:?}");
            // A rung this build still has shows its diff (its source alone if it is a first
            // rung); one it lost says so.
            let known = all.iter().find(|k| k.info().id == id.as_str());
            let want = match known {
                Some(k) if crate::registry::parent(&all, k.as_ref()).is_some() => {
                    crate::cmd::explain::DIFF
                }
                Some(_) => "<h2>Source</h2>",
                None => "not in this build",
            };
            assert!(html.contains(want), "{page:?}: {want}");
        }
        let pages = std::fs::read_dir(dir.join(PAGES))
            .unwrap()
            .filter(|e| {
                let n = e.as_ref().unwrap().file_name();
                n.to_string_lossy().starts_with("rung-")
            })
            .count();
        assert_eq!(pages, rungs.len(), "{name}: one page per rung");
        for w in &report.workloads {
            for s in &w.shapes {
                let page = dir.join(PAGES).join(shape_page(w.workload, &s.label));
                let html = std::fs::read_to_string(&page).unwrap();
                for r in &s.rows {
                    let anchor = format!("id=\"row-{}\"", slug(&r.row.id));
                    assert_eq!(html.matches(&anchor).count(), 1, "{page:?}: {anchor}");
                }
                // The results table's headers say what their columns hold.
                let meaning = table::Col::Kernel.meaning().replace('\'', "&#x27;");
                let kernel = format!("title=\"{meaning}\">kernel</th>");
                assert!(html.contains(&kernel), "{page:?}");
                let index = std::fs::read_to_string(dir.join(INDEX)).unwrap();
                assert!(index.contains(&format!(
                    "id=\"{}-{}\"",
                    w.workload.name(),
                    slug(&s.label)
                )));
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn every_chart_of_the_run_is_inline() {
    for (name, run) in each_run("charts") {
        let (dir, report) = written(&name, &run);
        let mut all = String::new();
        for p in Site::read(&dir).unwrap().pages.values() {
            all.push_str(p);
        }
        for (stem, _) in charts::all(&report) {
            // Each chart's title names its kind and shape as its file stem does.
            let (kind, label) = match stem.split_once('-').map(|(_, rest)| rest) {
                Some(rest) => rest.split_once('-').unwrap_or((rest, "")),
                None => panic!("{stem}"),
            };
            let words = match kind {
                "ablation" => format!("{label}: throughput per rung"),
                "intensity" => format!("{label}: FLOP per byte of traffic per rung"),
                "roofline" => format!("{label}: roofline"),
                _ => "throughput against size".to_string(),
            };
            assert!(all.contains(&words), "{name}: {stem} is missing ({words})");
        }
        let svgs = all.matches("<svg").count();
        assert!(svgs >= charts::all(&report).len(), "{name}: {svgs} charts");
        // The PNGs stay files of their own: no page embeds an image.
        assert!(!all.contains("data:image"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn roofline_points_name_themselves_without_a_script() {
    let (dir, report) = written("points", &ladder());
    let s = &report.workloads[0].shapes[0];
    let html = std::fs::read_to_string(
        dir.join(PAGES)
            .join(shape_page(report.workloads[0].workload, &s.label)),
    )
    .unwrap();
    let titles = html.matches("<circle class=\"pt\"").count();
    assert_eq!(titles, s.timed_rows().count());
    let first = s.timed_rows().next().unwrap();
    assert!(
        html.contains(&format!("{} {}: ", first.tag, first.row.id)),
        "no point names {}",
        first.row.id
    );
    assert!(html.contains("% of the"), "no share of roof");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn pages_stay_within_the_size_budget() {
    for (name, run) in each_run("budget") {
        let (dir, _) = written(&name, &run);
        let bytes = check::html_bytes(&dir).unwrap();
        assert!(bytes < check::BUDGET_BYTES, "{name}: {bytes} bytes");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn diffs_are_coloured_by_line_and_sass_counts_become_bars() {
    let blocks = doc::blocks(
        "SASS instruction mix",
        &[
            explain_cache::CachedBlock::Code(
                "diff".into(),
                "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n same\n".into(),
            ),
            explain_cache::CachedBlock::Table(
                ["kernel", "entry", "arch", "instr", "FFMA"]
                    .map(String::from)
                    .to_vec(),
                vec![
                    ["b", "k", "sm_90", "200", "64"].map(String::from).to_vec(),
                    ["a", "k", "sm_90", "100", "0"].map(String::from).to_vec(),
                ],
            ),
        ],
    );
    let html = serde_json::to_string(&blocks).unwrap();
    for class in ["file", "hunk", "del", "add", "ctx"] {
        assert!(
            html.contains(&format!("\"class\":\"{class}\"")),
            "{class}: {html}"
        );
    }
    let doc::BlockCtx::Bars { groups } = &blocks[2] else {
        panic!("no bars: {html}");
    };
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0].bars[0].pct, 100.0);
    assert_eq!(groups[0].bars[1].pct, 50.0);
    assert!(groups[0].bars[0].first && !groups[0].bars[1].first);
}

#[test]
fn compact_svg_keeps_every_element_and_text() {
    let report = Report::new(&ladder());
    let s = &report.workloads[0].shapes[0];
    let chart = charts::roofline::Roofline::new(&report, s).unwrap();
    let (full, _) = charts::svg(&chart).unwrap();
    let small = svg::compact(&full);
    assert!(
        small.len() * 10 < full.len() * 8,
        "{} -> {}",
        full.len(),
        small.len()
    );
    assert!(!small.contains("font-family"));
    for tag in ["<text", "<polyline", "<circle", "<rect", "<line", "<path"] {
        assert_eq!(
            full.matches(tag).count(),
            small.matches(tag).count(),
            "{tag}"
        );
    }
    let texts = |svg: &str| -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .map(|t| {
                t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()]
                    .trim()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(texts(&full), texts(&small));
}

#[test]
fn a_users_kernel_gets_a_page_while_its_file_is_the_one_the_run_ran() {
    let dir = std::env::temp_dir().join(format!("lab-html-user-src-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mine.cu");
    let code = "__global__ void mine(const float* A, const float* B, float* C, int M, int N, \
                int K) {}\n";
    std::fs::write(&file, code).unwrap();
    let text = format!(
        "{}:mine,workload=gemm,block=16x16,grid=tile:16x16,args=(A,B,C,M,N,4*K)",
        file.display()
    );
    let spec = crate::user_kernel::spec::UserKernelSpec::parse(&text).unwrap();
    let k = crate::user_kernel::UserKernel::load(&spec, None, 1, 8).unwrap();
    let mut run = sim();
    let first = &mut run.workloads[0].shapes[0];
    let mut row = first.rows[0].clone();
    row.id = k.id().to_string();
    row.role = kernel::Role::User;
    first.rows.push(row);
    run.user_kernels = vec![crate::user_kernel::record::KernelRecord::of(&k)];
    let page = |name: &str| {
        let (out, _) = written(name, &run);
        let html = std::fs::read_to_string(out.join(PAGES).join(rung_page(k.id()))).unwrap();
        // The shape's table links the row to it.
        let shape = &run.workloads[0].shapes[0];
        let table = std::fs::read_to_string(
            out.join(PAGES)
                .join(shape_page(run.workloads[0].workload, &shape.label)),
        )
        .unwrap();
        assert!(table.contains(&rung_page(k.id())), "{table}");
        let broken = Site::read(&out).unwrap().broken_links();
        assert!(broken.is_empty(), "{broken:#?}");
        std::fs::remove_dir_all(&out).unwrap();
        html.replace("&#x2f;", "/").replace("&#x27;", "'")
    };
    let html = page("user");
    assert!(html.contains(&format!("<h1>{}</h1>", k.id())), "{html}");
    assert!(html.contains("Run with this option"), "{html}");
    assert!(html.contains(&format!("--kernel {text}")), "{html}");
    assert!(html.contains("--against RUNG"), "{html}");
    // The summary's expression keeps its stars (no Markdown emphasis).
    assert!(html.contains("4*K"), "{html}");
    // A file edited since the run is another kernel: the page says so and shows no code.
    std::fs::write(&file, format!("// edited\n{code}")).unwrap();
    let html = page("user-changed");
    assert!(html.contains("changed since the run"), "{html}");
    assert!(!html.contains("Source diff against"), "{html}");
    std::fs::remove_dir_all(&dir).unwrap();
}
