//! A batch pipeline: a plan whose inputs start in (pinned) host memory and whose output ends
//! there, worked through in chunks. Each chunk copies its slice of the inputs host-to-device,
//! runs its launches and copies its slice of the output back; chunk `i` goes to stream
//! `i % streams`, so the copies of one chunk overlap the compute of another on a GPU. A stage
//! crate only states the chunks ([`Pipeline::chunked`]); every executor runs them: the CUDA
//! device on real streams from page-locked host buffers, the simulator one chunk after the
//! other. The time of such a plan is end to end: the copies are inside the timed span.

use crate::plan::{At, Buf, CudaPlan, Step};
use std::ops::Range;

/// `len` elements of a buffer from `at`; its host copy is the same range of the host buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub at: At,
    pub len: usize,
}

/// One chunk: copies in, launches (a range of the plan's steps), copies out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Input ranges copied host-to-device before the chunk's launches.
    pub upload: Vec<Span>,
    /// The plan's steps that compute this chunk: kernel launches only.
    pub steps: Range<usize>,
    /// Output ranges copied device-to-host after them.
    pub download: Vec<Span>,
}

/// The chunks of a batch and the streams they rotate over. Steps of the plan before the first
/// chunk (weights into `__constant__` memory) run once, before any chunk starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pipeline {
    pub streams: usize,
    pub chunks: Vec<Chunk>,
}

/// `(first item, items)` of each chunk of `chunk` items over a batch of `items`: the last
/// chunk holds the remainder. An empty batch has no chunks; a chunk of 0 counts as 1.
pub fn schedule(items: usize, chunk: usize) -> Vec<(usize, usize)> {
    let chunk = chunk.max(1);
    (0..items)
        .step_by(chunk)
        .map(|first| (first, chunk.min(items - first)))
        .collect()
}

impl Pipeline {
    /// The common case: a batch of `items` in chunks of `chunk` items; input `i` of
    /// `per_item_inputs` (input index, elements per item) and the output (`per_item_output`
    /// elements per item) are copied by item range, and chunk `j` is computed by the plan's
    /// steps `first_step + j * steps_per_chunk ..` (the caller pushes them in that order).
    pub fn chunked(
        streams: usize,
        items: usize,
        chunk: usize,
        per_item_inputs: &[(usize, usize)],
        per_item_output: usize,
        first_step: usize,
        steps_per_chunk: usize,
    ) -> Self {
        let chunks = schedule(items, chunk)
            .into_iter()
            .enumerate()
            .map(|(j, (first, n))| Chunk {
                upload: per_item_inputs
                    .iter()
                    .map(|&(i, per)| Span {
                        at: Buf::Input(i).at(first * per),
                        len: n * per,
                    })
                    .collect(),
                steps: first_step + j * steps_per_chunk..first_step + (j + 1) * steps_per_chunk,
                download: vec![Span {
                    at: Buf::Output.at(first * per_item_output),
                    len: n * per_item_output,
                }],
            })
            .collect();
        Self {
            streams: streams.max(1),
            chunks,
        }
    }

    /// The stream chunk `chunk` runs on.
    pub fn stream_of(&self, chunk: usize) -> usize {
        chunk % self.streams.max(1)
    }

    /// The inputs whose device copy comes from uploads: an executor poisons them (NaN) at the
    /// start of each run, so a range no chunk uploads shows in the check.
    pub fn uploaded(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for s in self.chunks.iter().flat_map(|c| &c.upload) {
            if let Buf::Input(i) = s.at.buf
                && !out.contains(&i)
            {
                out.push(i);
            }
        }
        out
    }

    /// The chunk whose steps start at step `i`, and the chunk whose steps end right after it.
    pub fn starts_at(&self, i: usize) -> Option<&Chunk> {
        self.chunks.iter().find(|c| c.steps.start == i)
    }

    pub fn ends_at(&self, i: usize) -> Option<&Chunk> {
        self.chunks.iter().find(|c| c.steps.end == i + 1)
    }

    /// Whether step `i` belongs to a chunk (rather than to the once-only steps before them).
    pub fn in_chunk(&self, i: usize) -> bool {
        self.chunks.iter().any(|c| c.steps.contains(&i))
    }

    /// What every executor relies on: at least one stream; chunks that follow one another
    /// through the plan's steps after the once-only ones, each a non-empty run of kernel
    /// launches that use no scratch buffer (chunks on different streams run at the same time);
    /// uploads into inputs and downloads from the output, inside the buffers (`len_of`).
    pub fn check(&self, plan: &CudaPlan, len_of: impl Fn(Buf) -> usize) -> Result<(), String> {
        if self.streams == 0 {
            return Err("a pipeline needs at least one stream".into());
        }
        let mut next = self.chunks.first().map_or(0, |c| c.steps.start);
        for (j, c) in self.chunks.iter().enumerate() {
            if c.steps.start != next || c.steps.is_empty() || c.steps.end > plan.steps.len() {
                return Err(format!(
                    "chunk {j}: steps {:?} do not follow on from step {next} within the plan's {}",
                    c.steps,
                    plan.steps.len()
                ));
            }
            next = c.steps.end;
            for s in &plan.steps[c.steps.clone()] {
                let Step::Kernel(l) = s else {
                    return Err(format!(
                        "chunk {j}: only kernel launches may run in a chunk"
                    ));
                };
                if l.args.iter().any(|a| match a {
                    crate::plan::Arg::Ptr(b) => matches!(b, Buf::Scratch(_)),
                    crate::plan::Arg::PtrAt(at) => matches!(at.buf, Buf::Scratch(_)),
                    _ => false,
                }) {
                    return Err(format!(
                        "chunk {j}: {} uses a scratch buffer, which chunks on other streams share",
                        l.entry
                    ));
                }
            }
            for (s, want_input) in c
                .upload
                .iter()
                .map(|s| (s, true))
                .chain(c.download.iter().map(|s| (s, false)))
            {
                let right = match s.at.buf {
                    Buf::Input(i) => want_input && i < plan.inputs.len(),
                    Buf::Output => !want_input,
                    Buf::Scratch(_) => false,
                };
                if !right {
                    return Err(format!(
                        "chunk {j}: copies go into inputs and out of the output, not {:?}",
                        s.at.buf
                    ));
                }
                if s.at.offset + s.len > len_of(s.at.buf) {
                    return Err(format!(
                        "chunk {j}: {} elements from {} pass the end of {:?} ({})",
                        s.len,
                        s.at.offset,
                        s.at.buf,
                        len_of(s.at.buf)
                    ));
                }
            }
        }
        if next != plan.steps.len() {
            return Err(format!(
                "steps {next}.. come after the last chunk; only steps before the chunks run once"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Arg, CudaSource, Launch};

    fn launch() -> Step {
        Step::Kernel(Launch {
            source: CudaSource::embedded("x.cu", ""),
            entry: "k".into(),
            grid: [1, 1, 1],
            block: [1, 1, 1],
            dynamic_smem: 0,
            args: vec![Arg::Ptr(Buf::Output)],
        })
    }

    #[test]
    fn the_schedule_covers_the_batch_once_with_a_partial_last_chunk() {
        assert_eq!(schedule(10, 4), vec![(0, 4), (4, 4), (8, 2)]);
        assert_eq!(schedule(1, 1000), vec![(0, 1)]);
        assert_eq!(schedule(3, 0), vec![(0, 1), (1, 1), (2, 1)]);
        assert!(schedule(0, 4).is_empty());
        for (items, chunk) in [(10000, 1000), (9999, 1000), (7, 3)] {
            let s = schedule(items, chunk);
            assert_eq!(s.iter().map(|c| c.1).sum::<usize>(), items);
            assert!(s.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0));
        }
    }

    #[test]
    fn chunks_rotate_over_the_streams_and_copy_their_own_items() {
        let p = Pipeline::chunked(4, 10, 2, &[(0, 3)], 5, 1, 1);
        assert_eq!(p.chunks.len(), 5);
        let streams: Vec<usize> = (0..5).map(|j| p.stream_of(j)).collect();
        assert_eq!(streams, vec![0, 1, 2, 3, 0]);
        let last = &p.chunks[4];
        assert_eq!(last.steps, 5..6);
        assert_eq!(
            last.upload,
            vec![Span {
                at: Buf::Input(0).at(24),
                len: 6
            }]
        );
        assert_eq!(last.download[0].at, Buf::Output.at(40));
        assert_eq!(p.uploaded(), vec![0]);
        assert!(p.starts_at(3).is_some() && p.ends_at(3).is_some() && !p.in_chunk(0));
    }

    #[test]
    fn a_pipeline_that_breaks_what_executors_rely_on_is_refused() {
        let plan = |n| CudaPlan {
            inputs: vec![crate::plan::Dtype::F32],
            steps: vec![launch(); n],
            ..CudaPlan::default()
        };
        let len = |b: Buf| if b == Buf::Output { 10 } else { 6 };
        let good = Pipeline::chunked(2, 2, 1, &[(0, 3)], 5, 0, 1);
        assert_eq!(good.check(&plan(2), len), Ok(()));
        let why = good.check(&plan(3), len).unwrap_err();
        assert!(why.contains("after the last chunk"), "{why}");
        let over = Pipeline::chunked(2, 2, 1, &[(0, 4)], 5, 0, 1);
        assert!(
            over.check(&plan(2), len)
                .unwrap_err()
                .contains("pass the end")
        );
        let mut gap = good.clone();
        gap.chunks[1].steps = 2..3;
        assert!(gap.check(&plan(3), len).unwrap_err().contains("follow on"));
        let mut wrong = good.clone();
        wrong.chunks[0].download[0].at = Buf::Input(0).at(0);
        assert!(
            wrong
                .check(&plan(2), len)
                .unwrap_err()
                .contains("not Input")
        );
        let none = Pipeline { streams: 0, ..good };
        assert!(none.check(&plan(2), len).is_err());
    }
}
