#ifndef LOOM_BACKENDS_CPP_LIBRARY_CALLS_H_
#define LOOM_BACKENDS_CPP_LIBRARY_CALLS_H_

#include <string>
#include <vector>

#include "ir/conv_call.h"
#include "ir/gemm.h"
#include "ir/gemm_chain.h"
#include "ir/module.h"

namespace loom::cpp {

// Whether an f32 product is large enough to call BLIS rather than oneDNN
// where the target has AVX2 but not AVX-512 (kBlisDeclaration): 2^24
// multiply-adds or more (256^3) and 256 rows or more, where BLIS measured
// faster on an Intel CPU (tests/bench:gemm_libraries; on AMD's, where it
// did not, the kernel calls oneDNN: loom_blis_ahead). With fewer rows BLIS
// packs all of the second operand for little reuse: [32,256]x[256,8000]
// ran at 31-39 GFLOP/s against oneDNN's 60-87, [32,1024]x[1024,1024] at
// 65-71 against 88, and from 64 to 128 rows the two were level.
// Not those that call OpenBLAS (MayCallOpenBlas).
bool MayCallBlis(const Gemm& gemm);
// Whether it may at some size, all but the sizes of MayCallBlis: such a
// product's kernel decides by its sizes as it runs, so that its code is the
// same for every shape (ir/shape_constants.h).
bool MayCallBlisAtSomeSize(const Gemm& gemm);

// Whether an f32 product calls OpenBLAS's cblas_sgemm rather than oneDNN
// where the target has AVX2 but not AVX-512 (kOpenBlasSgemmDeclaration):
// b row-major with a leading dimension a multiple of 512, 16 rows or more
// and 2^24 multiply-adds or more. oneDNN 2.6 runs the smaller of these
// with its no-copy AVX2 kernels, which on a Zen 3 ran at half speed with
// b 32-byte aligned, as loom's buffers are (tests/bench:gemm_libraries,
// GFLOP/s, 2 threads): [128,768]x[768,3072] 88 against OpenBLAS's 167,
// [128,1024]x[1024,1024] 78 against 150, [64,512]x[512,512] 125 against
// 151; one thread, [64,768]x[768,3072] 43 against 78. oneDNN stayed ahead
// with 8 rows (68 against 40) and with leading dimensions 256 and 768.
// OpenBLAS beat BLIS on the larger ones (loom run, medians of 5
// alternating runs, ms): 512^3 1.54 against 1.72, 1024^3 11.9 against
// 12.6, [256,1024]x[1024,1024] 3.09 against 4.37.
bool MayCallOpenBlas(const Gemm& gemm);

// Whether `gemm` is a batch of products of few rows by the panels of a
// weight (passes/pack_panel_weights.h): [m, k] x [k, 16] for each panel,
// a shared by all, b's panels and c's one after another, which
// loom_panel_gemm computes (kPanelGemm), streaming each panel once for all
// the rows.
bool IsPanelProduct(const Gemm& gemm);

// Whether a product without batch loops is too small for the library to
// share among the threads (`openmp`: whether the kernels may use them):
// fewer than 2^20 multiply-adds, some microseconds on one core, less than
// a parallel region costs where the threads outnumber the free cores (the
// zoo's small BERT, [32,128]x[128,128] products: 0.70-1.05 ms a run with
// the library's threads, 0.54-0.61 ms without, on a loaded 2-core Zen 4).
// Its call runs with OpenMP's threads set to one.
bool RunsAlone(const Gemm& gemm, bool openmp);
// Whether its kernel decides that as it runs (for a product that is not a
// batch): its code is then the same for every shape.
bool MayRunAlone(const Gemm& gemm, bool openmp);

// Whether `count` pieces of work (a C++ expression) share evenly among a
// kernel's `loom_threads` or are four a thread or more, as a C++ condition:
// then the threads take whole pieces (a batch's products, a kernel's outer
// rows), else they share each piece, so that none idles in a last round.
std::string SharesEvenly(const std::string& count);

// The body of the function for a gemm kernel, which calls oneDNN's
// dnnl_sgemm (f32; or, on AVX2, BLIS's bli_sgemm or OpenBLAS's cblas_sgemm,
// see MayCallBlis and MayCallOpenBlas) or CBLAS's
// cblas_dgemm (f64) once per position of its batch and accumulation loops; its arguments (a, b and
// c, each at its constant offset) go to `args`. `openmp`: whether the kernels may open parallel
// regions; `splits` says whether this one does.
std::string PrintGemm(const Gemm& gemm, bool openmp, std::vector<BufferRef>& args, bool& splits);

// Whether `gemm` may run with an epilogue (PrintGemmWithEpilogue): f32, with
// neither batch nor accumulation loops. At any count of rows, so that the
// code is the same for every shape: the rows decide as it runs.
bool MayRunWithEpilogue(const Gemm& gemm);

// The body of the function for a gemm kernel (MayRunWithEpilogue) that
// runs the kernel after it as its epilogue, over the same rows: in one
// parallel region, each thread computes its block of rows [loom_first,
// loom_last) of the product alone, waits for the others (the epilogue may
// read any row, and may write where the product read), and runs the
// epilogue's rows of that block while they are in its cache. Where the
// rows are too few for every thread (decided as it runs), the library
// shares the product among the threads first. `epilogue_params` declares
// the epilogue's parameters (p0, p1, ...; their arguments are `args`, to
// which the product's a, b and c are appended); `epilogue_rows` is its
// loops over one block of rows, inside the parallel region.
// `epilogue_shared` is the condition (of shape constants) under which the
// epilogue has the work to share among the threads on its own, empty where
// it never has: else the region runs on one thread unless the threads
// compute their own rows.
std::string PrintGemmWithEpilogue(const Gemm& gemm, const std::string& epilogue_params,
                                  const std::string& epilogue_rows,
                                  const std::string& epilogue_shared, std::vector<BufferRef>& args);

// The rows of one task of a gemm chain whose first product is `first`:
// about 1 MiB of its result (the fastest measured), at least 8.
int64_t ChainBlockRows(const Gemm& first);

// The body of the function for a gemm chain (ir/gemm_chain.h): the threads
// share its tasks, each a batch position and a block of its rows
// (ChainBlockRows; the last block may have fewer), on which it calls the
// first product,
// runs the middle kernel's rows (`middle_rows`, KernelPrinter::PrintRows:
// the rows [loom_first, loom_last) of its flattened row loops) and calls
// the second product, the libraries running serially inside the region.
// `middle_params` declares the middle kernel's parameters (p0, p1, ...;
// their arguments are `args`, to which the products' a, b and c are
// appended).
std::string PrintGemmChain(const GemmChain& chain, const std::string& middle_params,
                           const std::string& middle_rows, std::vector<BufferRef>& args);

// The body of the function for a conv call: one LoomConv2d for its shapes
// (dnnl_conv.inc), made at the first call. Its arguments (input, weight
// and output, each at its offset) go to `args`.
std::string PrintConv(const ConvCall& conv, std::vector<BufferRef>& args);

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_LIBRARY_CALLS_H_
