//! Convolution rung of the restrict-unroll stage: 04, the fused kernel with `__restrict__`,
//! its filter loops unrolled by compile-time specialization (NVRTC defines per layer) and
//! its weights in `__constant__` memory when they fit, and its CPU port (const-generic
//! filter size).

use kernel::{
    Arg, Bound, Buf, ConstantCopy, ConvDims, CpuPort, CudaPlan, CudaSource, Kernel, KernelInfo,
    Launch, Lineage, Precision, Role, Shape, Stage, Step, Unsupported, Workload, conv_args,
    conv_dims, cuda_source, div_ceil,
};
use rayon::prelude::*;

/// The convolution rungs of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![
        Box::new(ConvRestrictUnroll),
        Box::new(crate::streams::ConvStreams),
    ]
}

/// Threads (pixels) per block of `conv/04_restrict_unroll.cu`, and its largest BM.
const NT: usize = 256;
const MAX_BM: usize = 16;
// Filters up to the constant memory a module may use are read from `__constant__` memory,
// larger ones from shared memory.
use kernel::CONSTANT_BYTES;
/// Largest filter the kernel's fully unrolled tap loops are compiled for (K*K taps, each a
/// load and BM FMAs, unrolled; beyond that code size grows without benefit).
pub const MAX_UNROLLED_K: usize = 11;

/// `conv/04_restrict_unroll.cu`: compile-time K, C and M, `__restrict__`, unrolled taps.
pub struct ConvRestrictUnroll;

impl Kernel for ConvRestrictUnroll {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("conv-fused"),
            idea: "the layer's sizes as compile-time constants: constant index arithmetic, an unrolled filter row, weights in __constant__",
            bound: Some(Bound::Issue),
        })
    }

    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "conv-restrict-unroll".into(),
            workload: Workload::Conv,
            stage: Stage::RestrictUnroll,
            precision: Precision::Fp32,
            role: Role::Rung,
            rung: 4,
            summary: "fused + __restrict__, K/C/M as NVRTC defines, filter rows unrolled, weights in __constant__"
                .into(),
        }
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        let d = conv_dims(shape);
        if d.k > MAX_UNROLLED_K {
            return Err(Unsupported(format!(
                "filter size {} is above {MAX_UNROLLED_K}, the largest the unrolled tap loops are compiled for",
                d.k
            )));
        }
        Ok(())
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = conv_dims(shape);
        let mut plan = CudaPlan::single(2, launch(&d, d.b, conv_args(&d)));
        plan.steps.splice(0..0, constant_copy(&d));
        Some(plan)
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_restrict_unroll)
    }
}

/// The compiled module of `conv/04_restrict_unroll.cu` for the layer of `d`.
fn source(d: &ConvDims) -> CudaSource {
    cuda_source!("restrict-unroll", "conv/04_restrict_unroll.cu")
        .define("KS", d.k)
        .define("CIN", d.c)
        .define("MOUT", d.m)
        .define("FILTER_IN_CONSTANT", u8::from(filter_in_constant(d)))
}

fn filter_in_constant(d: &ConvDims) -> bool {
    d.m * d.ckk() * 4 <= CONSTANT_BYTES
}

/// One launch of rung 04's kernel over `images` images, with `args` (rung 04's own, or a
/// chunk's pointers and image count).
pub(crate) fn launch(d: &ConvDims, images: usize, args: Vec<Arg>) -> Launch {
    Launch {
        source: source(d),
        entry: "conv_restrict_unroll".into(),
        grid: [
            div_ceil(images * d.plane(), NT),
            div_ceil(d.m, d.m.min(MAX_BM)),
            1,
        ],
        block: [NT as u32, 1, 1],
        dynamic_smem: 0,
        args,
    }
}

/// The copy of the weights into the module's `__constant__` array, when they fit: the first
/// step of the plan, inside the timed span.
pub(crate) fn constant_copy(d: &ConvDims) -> Option<Step> {
    filter_in_constant(d).then(|| {
        Step::Constant(ConstantCopy {
            source: source(d),
            symbol: "filter_c".into(),
            from: Buf::Input(1).at(0),
            len: d.m * d.ckk(),
        })
    })
}

/// CPU port: the same specialization. The filter size is a const generic for the sizes the
/// lab meets (1, 3, 5, 7), so the taps of a filter row are a fixed-size array the compiler
/// keeps in registers and the q loop is unrolled; each output element of a row then sums its
/// K taps in a register and is read and written once per filter row (c, p) instead of once
/// per tap as in rung 03's port. Other sizes take the same loop with a runtime K.
pub(crate) fn cpu_restrict_unroll(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    conv_unrolled(&conv_dims(shape), inputs[0], inputs[1], out);
}

/// The specialized CPU convolution of rung 04, also the engine of the later rungs' ports:
/// the input and the filter may be stored in a narrower type (`T`, such as `half::f16`); the
/// filter is widened to f32 once and each image once, by the task that computes its feature
/// maps, and accumulation is FP32. Images are spread over rayon's threads.
pub fn conv_unrolled<T: Copy + Into<f32> + Sync>(d: &ConvDims, x: &[T], f: &[T], out: &mut [f32]) {
    let widen = |s: &[T]| -> Vec<f32> { s.iter().map(|&v| v.into()).collect() };
    let f = widen(f);
    out.par_chunks_mut(d.out_image())
        .enumerate()
        .for_each(|(b, y_img)| {
            let x_img = widen(&x[b * d.image()..(b + 1) * d.image()]);
            for (m, plane) in y_img.chunks_mut(d.plane()).enumerate() {
                let f_m = &f[m * d.ckk()..(m + 1) * d.ckk()];
                match d.k {
                    1 => plane_rows::<1>(d, &x_img, f_m, plane),
                    3 => plane_rows::<3>(d, &x_img, f_m, plane),
                    5 => plane_rows::<5>(d, &x_img, f_m, plane),
                    7 => plane_rows::<7>(d, &x_img, f_m, plane),
                    _ => plane_rows_dyn(d, &x_img, f_m, plane),
                }
            }
        });
}

/// One output feature map of one image: `x_img` is the image (C x H x W), `f_m` the map's
/// filter (C x K x K).
fn plane_rows<const K: usize>(d: &ConvDims, x_img: &[f32], f_m: &[f32], plane: &mut [f32]) {
    plane.fill(0.0);
    for (oh, y_row) in plane.chunks_mut(d.wo).enumerate() {
        for c in 0..d.c {
            for p in 0..K {
                let fr = (c * K + p) * K;
                let taps: [f32; K] = f_m[fr..fr + K].try_into().expect("K taps");
                let xr = &x_img[(c * d.h + oh + p) * d.w..][..d.w];
                for (yv, win) in y_row.iter_mut().zip(xr.windows(K)) {
                    let mut s = 0.0f32;
                    for q in 0..K {
                        s += taps[q] * win[q];
                    }
                    *yv += s;
                }
            }
        }
    }
}

fn plane_rows_dyn(d: &ConvDims, x_img: &[f32], f_m: &[f32], plane: &mut [f32]) {
    let k = d.k;
    plane.fill(0.0);
    for (oh, y_row) in plane.chunks_mut(d.wo).enumerate() {
        for c in 0..d.c {
            for p in 0..k {
                let taps = &f_m[(c * k + p) * k..][..k];
                let xr = &x_img[(c * d.h + oh + p) * d.w..][..d.w];
                for (yv, win) in y_row.iter_mut().zip(xr.windows(k)) {
                    *yv += taps.iter().zip(win).map(|(t, v)| t * v).sum::<f32>();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specialized_and_runtime_filter_sizes_match_a_direct_f64_loop() {
        for &(b, c, m, h, w, k) in &[
            (1, 1, 1, 1, 1, 1),
            (3, 2, 5, 9, 7, 3),
            (2, 3, 17, 12, 13, 5),
            (2, 2, 3, 8, 9, 7),
            (1, 2, 3, 6, 5, 4),
        ] {
            let shape = Shape::Conv { b, c, m, h, w, k };
            let d = conv_dims(&shape);
            let x: Vec<f32> = (0..b * d.image())
                .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
                .collect();
            let f: Vec<f32> = (0..m * d.ckk())
                .map(|i| ((i * 53) % 97) as f32 / 48.0 - 1.0)
                .collect();
            let mut out = vec![f32::NAN; b * d.out_image()];
            cpu_restrict_unroll(&shape, &[&x, &f], &mut out);
            let err = kernel::testing::relative_error(
                &out,
                &kernel::reference::reference(&shape, &[x, f]),
            );
            assert!(err < 1e-6, "{}", shape.label());
        }
        let big = Shape::Conv {
            b: 1,
            c: 1,
            m: 1,
            h: 20,
            w: 20,
            k: 13,
        };
        let why = ConvRestrictUnroll.supports(&big).unwrap_err().to_string();
        assert!(why.contains("13") && why.contains("11"), "{why}");
    }

    #[test]
    fn the_filter_goes_to_constant_memory_when_it_fits() {
        let plan = |c, m| {
            let s = Shape::Conv {
                b: 2,
                c,
                m,
                h: 40,
                w: 40,
                k: 7,
            };
            ConvRestrictUnroll.cuda(&s).unwrap()
        };
        let fits = plan(4, 16); // 12544 bytes
        let Step::Constant(copy) = &fits.steps[0] else {
            panic!("the weights are copied first: {:?}", fits.steps[0])
        };
        assert_eq!((copy.symbol.as_ref(), copy.len), ("filter_c", 16 * 4 * 49));
        assert_eq!(
            copy.source,
            fits.sources()[0].clone(),
            "the launch's own module"
        );
        let big = plan(64, 17); // 213248 bytes: staged in shared memory instead
        assert_eq!(big.steps.len(), 1);
        assert!(big.sources()[0].label().contains("FILTER_IN_CONSTANT=0"));
    }

    #[test]
    fn each_layer_is_its_own_compiled_module() {
        let plan = |c, m| {
            let s = Shape::Conv {
                b: 2,
                c,
                m,
                h: 40,
                w: 40,
                k: 7,
            };
            ConvRestrictUnroll.cuda(&s).unwrap().sources()[0].clone()
        };
        let (a, b) = (plan(1, 4), plan(4, 16));
        assert_ne!(a, b);
        assert_eq!(
            b.label(),
            "restrict-unroll/kernels/conv/04_restrict_unroll.cu [KS=7 CIN=4 MOUT=16 FILTER_IN_CONSTANT=1]"
        );
    }
}
