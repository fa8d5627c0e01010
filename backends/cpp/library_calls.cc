#include "backends/cpp/library_calls.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/common/c_scalar.h"
#include "backends/cpp/plan.h"
#include "ir/shape_constants.h"

namespace loom::cpp {
namespace {

using cscalar::CType;

// Whether an f32 product's b is row-major with a leading dimension a
// multiple of 512, which oneDNN 2.6's no-copy kernels run slowly
// (MayCallOpenBlas, PrintGemmWithEpilogue). A linear layer's weight of
// 1024 or 3072 columns has such rows as the model stores it; the CPU
// pipelines pad them (passes/pad_gemm_weights.h), so what meets these
// rules there is a b computed at run time or a weight of 512 columns.
bool HasSlowLeadingDimension(const Gemm& gemm) {
  constexpr int64_t kSlowLeadingMultiple = 512;
  return gemm.dtype == DType::kF32 && !gemm.b.transposed &&
         gemm.b.leading % kSlowLeadingMultiple == 0;
}

// MayCallBlis's sizes.
constexpr int64_t kBlisMinMultiplyAdds = int64_t{1} << 24;
constexpr int64_t kBlisMinRows = 256;

// MayCallBlis's rule on sizes as a C++ condition of the product's shape
// constants, so that its kernel decides as it runs.
std::string BlisSizeCondition(const Gemm& gemm) {
  return absl::StrCat("loom_blis_ahead && ", MarkShapeConstant(gemm.m), " >= ", kBlisMinRows,
                      " && ", MarkedProduct({gemm.m, gemm.n, gemm.k}),
                      " >= ", kBlisMinMultiplyAdds);
}

// `p` advanced to the batch position x0, x1, ... and the accumulation
// position s0, s1, ... of `matrix`.
std::string MatrixAddress(const std::string& p, const GemmMatrix& matrix) {
  std::string address = p;
  for (size_t i = 0; i < matrix.batch_strides.size(); ++i) {
    if (matrix.batch_strides[i] != 0) {
      absl::StrAppend(&address, " + x", i, " * ", MarkShapeConstant(matrix.batch_strides[i]));
    }
  }
  for (size_t j = 0; j < matrix.accumulate_strides.size(); ++j) {
    if (matrix.accumulate_strides[j] != 0) {
      absl::StrAppend(&address, " + s", j, " * ", MarkShapeConstant(matrix.accumulate_strides[j]));
    }
  }
  return address;
}

// The pointers a gemm call reads and writes, and its rows: the whole
// product's, or one thread's block of them.
struct GemmOperands {
  std::string a, b, c;
  std::string m;
};

// A call's count of rows, `m`: a shape constant where it is a number, not a
// variable of the kernel (ir/shape_constants.h).
std::string MarkedRows(const std::string& m) {
  int64_t rows = 0;
  return absl::SimpleAtoi(m, &rows) && rows >= 0 ? MarkShapeConstant(rows) : m;
}

// A CBLAS call (`function`: cblas_sgemm or cblas_dgemm) computing `gemm`
// row-major (101) on the matrices at `a`, `b` and `c` (112 transposes, 111
// does not).
std::string CblasCall(const char* function, const char* one, const Gemm& gemm, const std::string& a,
                      const std::string& b, const std::string& c, const std::string& m,
                      const std::string& beta, const std::string& indent) {
  return absl::StrFormat("%s%s(101, %d, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", indent,
                         function, gemm.a.transposed ? 112 : 111, gemm.b.transposed ? 112 : 111,
                         MarkedRows(m), MarkShapeConstant(gemm.n), MarkShapeConstant(gemm.k), one,
                         a, MarkShapeConstant(gemm.a.leading), b, MarkShapeConstant(gemm.b.leading),
                         beta, c, MarkShapeConstant(gemm.c.leading));
}

// `avx2_call` where the prelude's `macro` is 1 (an AVX2 target without
// AVX-512 and the library at hand), else `dnnl_call`.
std::string OnAvx2Only(const char* macro, const std::string& avx2_call,
                       const std::string& dnnl_call) {
  return absl::StrCat("#if ", macro, "\n", avx2_call, "#else\n", dnnl_call, "#endif\n");
}

// A dnnl_sgemm call of `gemm`'s product on `columns` of its columns,
// those of b and c at `b` and `c`.
std::string DnnlCall(const Gemm& gemm, const std::string& a, const std::string& b,
                     const std::string& c, const std::string& m, int64_t columns,
                     const std::string& beta, const std::string& indent) {
  return absl::StrFormat(
      "%sdnnl_sgemm('%c', '%c', %s, %s, %s, 1.0f, %s, %s, %s, %s, %s, %s, %s);\n", indent,
      gemm.a.transposed ? 'T' : 'N', gemm.b.transposed ? 'T' : 'N', MarkedRows(m),
      MarkShapeConstant(columns), MarkShapeConstant(gemm.k), a, MarkShapeConstant(gemm.a.leading),
      b, MarkShapeConstant(gemm.b.leading), beta, c, MarkShapeConstant(gemm.c.leading));
}

// oneDNN 2.6's sgemm computes a last column past a multiple of 16 at a
// fraction of its speed: a 1x1 conv on 7x7 positions, [1152,192]x[192,49],
// took 0.150-0.154 ms on two threads, its first 48 columns 0.097, and the
// 48 and then the last in a call of its own 0.116-0.118. So a product with
// such columns and rows enough computes its last column apart: from 192
// rows each product of bench gemm_libraries --last_column ran at 18-39%
// more GFLOP/s on AVX-512 and 11-17% more held to AVX2, while with 96 or
// 128 rows, shared by the library among the threads, some ran up to 12%
// slower on AVX-512. The call decides as it runs, by its rows (a thread's
// own where it computes a block of them alone).
constexpr int64_t kLibraryColumnBlock = 16;
constexpr int64_t kLastColumnApartMinRows = 192;

// The lines computing `gemm`'s product with dnnl_sgemm, on `m` rows: its
// last column apart where the rule above asks.
std::string DnnlCalls(const Gemm& gemm, const std::string& a, const std::string& b,
                      const std::string& c, const std::string& m, const std::string& beta,
                      const std::string& indent) {
  const auto whole = [&](const std::string& at) {
    return DnnlCall(gemm, a, b, c, m, gemm.n, beta, at);
  };
  if (gemm.n <= kLibraryColumnBlock || gemm.n % kLibraryColumnBlock != 1) return whole(indent);
  const int64_t last = gemm.n - 1;
  const auto apart = [&](const std::string& at) {
    return absl::StrCat(
        DnnlCall(gemm, a, b, c, m, last, beta, at),
        DnnlCall(gemm, a, absl::StrCat(b, " + ", MarkShapeConstant(last * gemm.b.col_stride)),
                 absl::StrCat(c, " + ", MarkShapeConstant(last * gemm.c.col_stride)), m, 1, beta,
                 at));
  };
  const std::string inner = indent + "  ";
  return absl::StrCat(indent, "if (", MarkedRows(m), " >= ", kLastColumnApartMinRows, ") {\n",
                      apart(inner), indent, "} else {\n", whole(inner), indent, "}\n");
}

// The library call of one product of `gemm`: it sets c, or with
// accumulation loops adds to it after their first position (`beta`, a
// variable of the loops). Its lines, each after `indent`.
std::string GemmCall(const Gemm& gemm, const GemmOperands& operands, const std::string& indent) {
  const std::string a = MatrixAddress(operands.a, gemm.a);
  const std::string b = MatrixAddress(operands.b, gemm.b);
  const std::string c = MatrixAddress(operands.c, gemm.c);
  const std::string& m = operands.m;
  const bool f32 = gemm.dtype == DType::kF32;
  const std::string beta = gemm.accumulate.empty() ? (f32 ? "0.0f" : "0.0") : "beta";
  if (!f32) return CblasCall("cblas_dgemm", "1.0", gemm, a, b, c, m, beta, indent);
  const std::string dnnl = DnnlCalls(gemm, a, b, c, m, beta, indent);
  if (MayCallOpenBlas(gemm)) {
    return OnAvx2Only("LOOM_OPENBLAS_SGEMM",
                      CblasCall("cblas_sgemm", "1.0f", gemm, a, b, c, m, beta, indent), dnnl);
  }
  if (!MayCallBlisAtSomeSize(gemm)) return dnnl;
  // BLIS takes row and column strides of the matrices as stored, and
  // transposes them by flag (8; 0 for none).
  const std::string inner = indent + "  ";
  const std::string blis = absl::StrFormat(
      "%sbli_sgemm(%d, %d, %s, %s, %s, &loom_blis_one, %s, %s, 1, %s, %s, 1, %s, %s, %s, 1);\n",
      inner, gemm.a.transposed ? 8 : 0, gemm.b.transposed ? 8 : 0, MarkedRows(m),
      MarkShapeConstant(gemm.n), MarkShapeConstant(gemm.k), a, MarkShapeConstant(gemm.a.leading), b,
      MarkShapeConstant(gemm.b.leading), gemm.accumulate.empty() ? "&loom_blis_zero" : "&beta", c,
      MarkShapeConstant(gemm.c.leading));
  return absl::StrCat("#if LOOM_BLIS\n", indent, "if (", BlisSizeCondition(gemm), ") {\n", blis,
                      indent, "} else\n#endif\n", indent, "{\n",
                      DnnlCalls(gemm, a, b, c, m, beta, inner), indent, "}\n");
}

// How the threads share a batch of products, each making its calls alone
// inside one parallel region (the libraries run serially there): whole
// calls where every thread gets the same number of them or at least four
// (16 products of 128x64x128 took 0.124 ms one after the other, 0.097 ms
// shared), else a block of each call's rows, so that no thread idles in a
// last round. A call outside a parallel region would share its own product
// among the threads; inside one that does not share (`if`), it opens a
// nested region, whose fresh threads run beside the idle team's (ViT-tiny,
// 3 attention heads on 2 threads of a loaded 2-core Zen 4, threads not
// spinning: 67-89 ms so, 28 ms with blocks of rows).
constexpr char kSplitBatch[] =
    "  const int loom_threads = omp_get_max_threads();\n"
    "  const int loom_split = %s;\n";

// The start of that parallel region and of its loops over the calls (each
// thread taking whole calls, or blocks of rows, loom_blocks to a call).
constexpr char kSharedCalls[] =
    "  #pragma omp parallel\n"
    "  {\n"
    "    const int64_t loom_blocks = loom_split ? 1 : loom_threads < %s ? loom_threads : %s;\n"
    "    #pragma omp for collapse(%d)\n";

// The loop over one call's blocks of rows, and the rows of block `r`.
constexpr char kRowBlock[] =
    "for (int64_t r = 0; r < loom_blocks; ++r) {\n"
    "%s  const int64_t loom_first = %s * r / loom_blocks;\n"
    "%s  const int64_t loom_last = %s * (r + 1) / loom_blocks;\n";

constexpr int64_t kAloneBelowMultiplyAdds = int64_t{1} << 20;

// The extents whose product is a product's count of multiply-adds.
std::vector<int64_t> MultiplyAddExtents(const Gemm& gemm) {
  std::vector<int64_t> extents = {gemm.m, gemm.n, gemm.k};
  extents.insert(extents.end(), gemm.accumulate.begin(), gemm.accumulate.end());
  return extents;
}

// `call`, a product's call (or its loops of calls), on one thread where the
// product is too small to share among the threads (RunsAlone), decided as
// the kernel runs, so that its code is the same for every shape
// (ir/shape_constants.h). The library reads the number of threads to use
// from OpenMP's, whose count `loom_threads` holds.
std::string CallAloneWhenSmall(const Gemm& gemm, const std::string& call,
                               const std::string& indent) {
  return absl::StrCat(indent, "const bool loom_alone = ", MarkedProduct(MultiplyAddExtents(gemm)),
                      " < ", kAloneBelowMultiplyAdds, ";\n", indent,
                      "if (loom_alone) omp_set_num_threads(1);\n", call, indent,
                      "if (loom_alone) omp_set_num_threads(loom_threads);\n");
}

// An operand's dims, then its strides.
std::string OperandText(const ConvOperand& operand) {
  std::vector<std::string> values;
  for (const std::array<int64_t, 4>* part : {&operand.dims, &operand.strides}) {
    for (int64_t v : *part) values.push_back(MarkShapeConstant(v));
  }
  return absl::StrCat("{", absl::StrJoin(values, ", "), "}");
}

// BLIS's threads for the calls of one kernel: one each where the threads
// share its batch, else all of them (BLIS alone does not follow OpenMP's
// default, all cores).
std::string BlisThreads(bool splits) {
  return absl::StrCat("#if LOOM_BLIS\n  bli_thread_set_num_threads(",
                      splits ? "1" : "omp_get_max_threads()", ");\n#endif\n");
}

// Declares the batch loops' variables x0, x1, ... at the batch position
// `position` (row-major), each line after `indent`.
std::string BatchVariables(const std::vector<int64_t>& batch, const std::string& position,
                           const std::string& indent) {
  std::string text;
  for (size_t i = 0; i < batch.size(); ++i) {
    absl::StrAppend(&text, indent, "const int64_t x", i, " = ", position, " / ",
                    MarkShapeConstant(Product(batch, i + 1, batch.size())), " % ",
                    MarkShapeConstant(batch[i]), ";\n");
  }
  return text;
}

// `gemm` as a task of a gemm chain calls it, on `rows` of its rows: the
// library is chosen by the size of one call.
Gemm BlockOf(const Gemm& gemm, int64_t rows) {
  Gemm block = gemm;
  block.m = rows;
  return block;
}

// The call of `block`'s product (BlockOf) on the task's rows, its
// matrices at `a`, `b` and `c`.
std::string BlockCall(const Gemm& block, const std::string& a, const std::string& b,
                      const std::string& c) {
  const GemmOperands operands{
      absl::StrCat(a, " + loom_row0 * ", MarkShapeConstant(block.a.row_stride)), b,
      absl::StrCat(c, " + loom_row0 * ", MarkShapeConstant(block.c.row_stride)), "loom_rows"};
  return absl::StrCat("    {\n", BatchVariables(block.batch, "loom_batch", "      "),
                      GemmCall(block, operands, "      "), "    }\n");
}

}  // namespace

std::string SharesEvenly(const std::string& count) {
  return absl::StrCat(count, " % loom_threads == 0 || ", count, " >= 4 * loom_threads");
}

bool MayRunAlone(const Gemm& gemm, bool openmp) { return openmp && gemm.batch.empty(); }

bool RunsAlone(const Gemm& gemm, bool openmp) {
  const std::vector<int64_t> extents = MultiplyAddExtents(gemm);
  return MayRunAlone(gemm, openmp) && Product(extents, 0, extents.size()) < kAloneBelowMultiplyAdds;
}

bool MayCallBlisAtSomeSize(const Gemm& gemm) {
  return gemm.dtype == DType::kF32 && !HasSlowLeadingDimension(gemm);
}

bool MayCallBlis(const Gemm& gemm) {
  return MayCallBlisAtSomeSize(gemm) && gemm.m >= kBlisMinRows &&
         int64_t{gemm.m} * gemm.n * gemm.k >= kBlisMinMultiplyAdds;
}

bool IsPanelProduct(const Gemm& gemm) {
  return gemm.dtype == DType::kF32 && gemm.batch.size() == 1 && gemm.accumulate.empty() &&
         gemm.n == kPanelWidth && !gemm.a.transposed && !gemm.b.transposed &&
         gemm.a.batch_strides[0] == 0 && gemm.b.leading == kPanelWidth &&
         gemm.b.batch_strides[0] == gemm.k * kPanelWidth && gemm.c.leading == kPanelWidth &&
         gemm.c.batch_strides[0] == gemm.m * kPanelWidth;
}

bool MayCallOpenBlas(const Gemm& gemm) {
  constexpr int64_t kMinMultiplyAdds = int64_t{1} << 24;
  constexpr int64_t kMinRows = 16;
  return HasSlowLeadingDimension(gemm) && gemm.m >= kMinRows &&
         int64_t{gemm.m} * gemm.n * gemm.k >= kMinMultiplyAdds;
}

// The body of the function for a gemm kernel; its arguments (a, b and c,
// each at its constant offset) go to `args`. `openmp`: whether the kernels
// may open parallel regions; `splits` says whether this one does.
std::string PrintGemm(const Gemm& gemm, bool openmp, std::vector<BufferRef>& args, bool& splits) {
  const char* type = CType(gemm.dtype);
  args = {{gemm.a.buffer, gemm.a.offset},
          {gemm.b.buffer, gemm.b.offset},
          {gemm.c.buffer, gemm.c.offset}};
  std::string body = absl::StrFormat(
      "  const %s* p0 = (const %s*)a[0];\n  const %s* p1 = (const %s*)a[1];\n"
      "  %s* p2 = (%s*)a[2];\n",
      type, type, type, type, type, type);
  const size_t header = body.size();
  if (IsPanelProduct(gemm)) {
    splits = false;
    return absl::StrCat(
        body, absl::StrFormat("  loom_panel_gemm(%s, %s, %s, p0, %s, p1, p2);\n",
                              MarkShapeConstant(gemm.m), MarkShapeConstant(gemm.k),
                              MarkShapeConstant(gemm.batch[0]), MarkShapeConstant(gemm.a.leading)));
  }
  const int64_t calls = Product(gemm.batch, 0, gemm.batch.size());
  splits = openmp && calls > 1;
  if (splits) {
    const std::string marked_calls = MarkShapeConstant(calls);
    absl::StrAppend(&body, absl::StrFormat(kSplitBatch, SharesEvenly(marked_calls)));
  }
  if (MayCallBlisAtSomeSize(gemm)) absl::StrAppend(&body, BlisThreads(splits));
  int depth = 1;
  if (splits) {
    const std::string rows = MarkShapeConstant(gemm.m);
    absl::StrAppend(&body, absl::StrFormat(kSharedCalls, rows, rows, gemm.batch.size() + 1));
    ++depth;
  }
  for (size_t i = 0; i < gemm.batch.size(); ++i, ++depth) {
    absl::StrAppend(&body, std::string(2 * depth, ' '),
                    absl::StrFormat("for (int64_t x%d = 0; x%d < %s; ++x%d) {\n", i, i,
                                    MarkShapeConstant(gemm.batch[i]), i));
  }
  GemmOperands operands{"p0", "p1", "p2", absl::StrCat(gemm.m)};
  if (splits) {
    const std::string indent(2 * depth, ' ');
    const std::string rows = MarkShapeConstant(gemm.m);
    absl::StrAppend(&body, indent, absl::StrFormat(kRowBlock, indent, rows, indent, rows));
    operands = {absl::StrCat("p0 + loom_first * ", MarkShapeConstant(gemm.a.row_stride)), "p1",
                absl::StrCat("p2 + loom_first * ", MarkShapeConstant(gemm.c.row_stride)),
                "loom_last - loom_first"};
    ++depth;
  }
  // Accumulation loops, each position's call adding to what the ones
  // before it summed.
  for (size_t j = 0; j < gemm.accumulate.size(); ++j, ++depth) {
    absl::StrAppend(&body, std::string(2 * depth, ' '),
                    absl::StrFormat("for (int64_t s%d = 0; s%d < %s; ++s%d) {\n", j, j,
                                    MarkShapeConstant(gemm.accumulate[j]), j));
  }
  if (!gemm.accumulate.empty()) {
    std::vector<std::string> first;
    for (size_t j = 0; j < gemm.accumulate.size(); ++j)
      first.push_back(absl::StrCat("s", j, " == 0"));
    absl::StrAppend(
        &body, std::string(2 * depth, ' '),
        absl::StrFormat("const %s beta = %s ? 0 : 1;\n", type, absl::StrJoin(first, " && ")));
  }
  absl::StrAppend(&body, GemmCall(gemm, operands, std::string(2 * depth, ' ')));
  for (--depth; depth >= 1; --depth) {
    absl::StrAppend(&body, std::string(2 * depth, ' '), "}\n");
  }
  if (MayRunAlone(gemm, openmp)) {
    return absl::StrCat(body.substr(0, header),
                        "  const int loom_threads = omp_get_max_threads();\n",
                        CallAloneWhenSmall(gemm, body.substr(header), "  "));
  }
  return body;
}

// From this many rows per thread on, a gemm with an epilogue gives each
// thread its own block of rows (a serial call, then the epilogue on the
// rows still in its cache); fewer, and the library shares the product
// among the threads as it sees fit. On two threads (bench gemm_epilogue),
// blocks of 64 to 512 rows ran up to 21% faster on AVX-512 and within the
// noise (5%) on AVX2; blocks of 32 rows 3-6% faster on AVX-512 but 11-13%
// slower on AVX2.
constexpr int64_t kRowsPerThread = 64;

// But where b's leading dimension is a slow one (HasSlowLeadingDimension)
// and b has 2^20 elements or more, a block of fewer than 128 rows sends
// oneDNN's serial call to its slow no-copy kernels on AVX-512 too, so the
// library shares such a product. (A smaller b ran level or a few percent
// faster in blocks of 64 rows: [128,512]x[512,512], [128,128]x[128,512].)
// With its epilogue (bench gemm_epilogue, 2 threads, a 2-core Intel Xeon
// with AVX-512, microseconds): BERT-base's FFN up-projection,
// [128,768]x[768,3072], 5139 in blocks of 64 rows against 3441 shared;
// ViT-B's, 197 rows, 8128 against 5918; with 256 rows, blocks of 128 ran
// ahead, 6817 against 7453. In BERT-base that product with its GELU went
// from 52.8-65.7 to 43.8-52.1 ms a run (loom run --profile, 3 alternating
// runs). On AVX2, where these products call OpenBLAS, the two ran level.
constexpr int64_t kRowsPerThreadOnSlowLeading = 128;
constexpr int64_t kSlowLeadingMinElements = int64_t{1} << 20;

// But where the target has AVX2 but not AVX-512, a product of a depth of
// kSharesMinDepth or more with 256 to 511 rows a thread is shared by one
// library call on every thread: the threads' serial calls, each packing all
// of b for itself, took 0.96-1.24x its time with oneDNN (17 of 18 above 1)
// and 1.03-1.30x with BLIS (bench gemm_libraries --blocks, three runs, a
// Zen 3 on 2 threads; [512,3072]x[3072,768] 1.15-1.21x with either). With
// 512 rows a thread or more, and over a 1x1 conv's shallow products, they
// ran level (0.96-1.09x); with 128, 0.93-1.17x, left alone. AVX-512 is
// not measured.
constexpr int64_t kSharesMinDepth = 768;
constexpr int64_t kSharesRowsPerThread[2] = {256, 512};

namespace {

int64_t RowsPerThread(const Gemm& gemm) {
  return HasSlowLeadingDimension(gemm) && gemm.k * gemm.n >= kSlowLeadingMinElements
             ? kRowsPerThreadOnSlowLeading
             : kRowsPerThread;
}

// Whether the threads' own blocks of rows run the product: enough rows for
// each, and not one that a call on every thread runs faster
// (kSharesMinDepth; LOOM_AVX2_ONLY is in kBlisDeclaration, which the
// products that may call BLIS include), as a C++ condition decided as the
// kernel runs.
std::string PerThreadCondition(const Gemm& gemm) {
  const std::string rows = MarkShapeConstant(gemm.m);
  std::string condition = absl::StrCat(rows, " >= ", RowsPerThread(gemm), " * loom_threads");
  if (MayCallBlisAtSomeSize(gemm)) {
    absl::StrAppend(&condition, " && !(LOOM_AVX2_ONLY && ", MarkShapeConstant(gemm.k),
                    " >= ", kSharesMinDepth, " && ", rows, " >= ", kSharesRowsPerThread[0],
                    " * loom_threads && ", rows, " < ", kSharesRowsPerThread[1],
                    " * loom_threads)");
  }
  return condition;
}

}  // namespace

bool MayRunWithEpilogue(const Gemm& gemm) {
  return gemm.dtype == DType::kF32 && gemm.batch.empty() && gemm.accumulate.empty();
}

std::string PrintGemmWithEpilogue(const Gemm& gemm, const std::string& epilogue_params,
                                  const std::string& epilogue_rows,
                                  const std::string& epilogue_shared,
                                  std::vector<BufferRef>& args) {
  const size_t first = args.size();
  for (const GemmMatrix* matrix : {&gemm.a, &gemm.b, &gemm.c}) {
    args.push_back({matrix->buffer, matrix->offset});
  }
  std::string body = absl::StrFormat(
      "%s  const float* g0 = (const float*)a[%d];\n  const float* g1 = (const float*)a[%d];\n"
      "  float* g2 = (float*)a[%d];\n"
      "  const int loom_threads = omp_get_max_threads();\n"
      "  const int loom_per_thread = %s;\n",
      epilogue_params, first, first + 1, first + 2, PerThreadCondition(gemm));
  if (MayCallBlisAtSomeSize(gemm)) {
    absl::StrAppend(&body,
                    "#if LOOM_BLIS\n  bli_thread_set_num_threads(loom_per_thread ? 1 : "
                    "loom_threads);\n#endif\n");
  }
  GemmOperands whole{"g0", "g1", "g2", absl::StrCat(gemm.m)};
  GemmOperands block{absl::StrCat("g0 + loom_first * ", MarkShapeConstant(gemm.a.row_stride)), "g1",
                     absl::StrCat("g2 + loom_first * ", MarkShapeConstant(gemm.c.row_stride)),
                     "loom_last - loom_first"};
  // Too few rows for each thread's own block: the library shares the
  // product (unless it is too small to share, as PrintGemm's), then the
  // threads share the epilogue where it has the work for them; else it runs
  // here, outside a parallel region (OpenMP's `if` would still open one).
  const std::string whole_call = CallAloneWhenSmall(gemm, GemmCall(gemm, whole, "    "), "    ");
  const std::string rows = MarkShapeConstant(gemm.m);
  absl::StrAppend(&body, "  if (!loom_per_thread",
                  epilogue_shared.empty() ? "" : absl::StrCat(" && !(", epilogue_shared, ")"),
                  ") {\n", whole_call,
                  "    const int64_t loom_first = 0;\n    const int64_t loom_last = ", rows, ";\n",
                  epilogue_rows, "    return;\n  }\n");
  absl::StrAppend(
      &body, "  if (!loom_per_thread) {\n", whole_call, "  }\n  #pragma omp parallel\n  {\n",
      absl::StrFormat(
          "    const int64_t loom_team = omp_get_num_threads();\n"
          "    const int64_t loom_first = %s * omp_get_thread_num() / loom_team;\n"
          "    const int64_t loom_last = %s * (omp_get_thread_num() + 1) / loom_team;\n",
          rows, rows),
      "    if (loom_per_thread) {\n", GemmCall(gemm, block, "      "),
      "      #pragma omp barrier\n    }\n", epilogue_rows, "  }\n");
  return body;
}

// The first product's rows a task of a gemm chain computes fill about
// this much. Whisper-tiny's attention (6 heads, 1500 x 1500 scores of 64
// deep products a layer) measured 110-129 ms over its 4 layers in tasks of
// 16 rows (96 KiB of scores), 97 in tasks of 80, 74-103 in tasks of 168
// (1 MiB), 79-94 in tasks of 344, 88-93 in tasks of 696, against 108-120
// apart (loom run --profile, a noisy 2-core Intel Xeon with AVX-512): each
// call packs the second operand again, so that small blocks lose.
constexpr int64_t kChainBlockBytes = int64_t{1} << 20;
constexpr int64_t kChainMinBlockRows = 8;

// Rows of a gemm chain's task: about kChainBlockBytes of the first
// product's result, a multiple of kChainMinBlockRows, at most all of them.
int64_t ChainBlockRows(const Gemm& first) {
  const int64_t rows = kChainBlockBytes / (DTypeSize(first.dtype) * first.n);
  return std::min(first.m,
                  std::max(kChainMinBlockRows, rows / kChainMinBlockRows * kChainMinBlockRows));
}

std::string PrintGemmChain(const GemmChain& chain, const std::string& middle_params,
                           const std::string& middle_rows, std::vector<BufferRef>& args) {
  const int64_t m = chain.first.m;
  const int64_t block_rows = ChainBlockRows(chain.first);
  const Gemm first = BlockOf(chain.first, block_rows);
  const Gemm second = BlockOf(chain.second, block_rows);
  const size_t base = args.size();
  for (const Gemm* gemm : {&first, &second}) {
    for (const GemmMatrix* matrix : {&gemm->a, &gemm->b, &gemm->c}) {
      args.push_back({matrix->buffer, matrix->offset});
    }
  }
  const int64_t blocks = (m + block_rows - 1) / block_rows;
  const int64_t tasks = Product(first.batch, 0, first.batch.size()) * blocks;
  std::string body = absl::StrFormat(
      "%s  const float* g0 = (const float*)a[%d];\n  const float* g1 = (const float*)a[%d];\n"
      "  float* g2 = (float*)a[%d];\n"
      "  const float* h0 = (const float*)a[%d];\n  const float* h1 = (const float*)a[%d];\n"
      "  float* h2 = (float*)a[%d];\n",
      middle_params, base, base + 1, base + 2, base + 3, base + 4, base + 5);
  if (MayCallBlisAtSomeSize(first) || MayCallBlisAtSomeSize(second)) {
    absl::StrAppend(&body, BlisThreads(/*splits=*/true));
  }
  absl::StrAppend(
      &body,
      absl::StrFormat("  #pragma omp parallel for\n"
                      "  for (int64_t loom_task = 0; loom_task < %s; ++loom_task) {\n"
                      "    const int64_t loom_batch = loom_task / %s;\n"
                      "    const int64_t loom_row0 = loom_task %% %s * %s;\n"
                      "    const int64_t loom_rows = %s - loom_row0 < %s ? %s - loom_row0 : %s;\n",
                      MarkShapeConstant(tasks), MarkShapeConstant(blocks),
                      MarkShapeConstant(blocks), MarkShapeConstant(block_rows),
                      MarkShapeConstant(m), MarkShapeConstant(block_rows), MarkShapeConstant(m),
                      MarkShapeConstant(block_rows)),
      BlockCall(first, "g0", "g1", "g2"),
      absl::StrFormat("    {\n    const int64_t loom_first = loom_batch * %s + loom_row0;\n"
                      "    const int64_t loom_last = loom_first + loom_rows;\n",
                      MarkShapeConstant(m)),
      middle_rows, "    }\n", BlockCall(second, "h0", "h1", "h2"), "  }\n");
  return body;
}

// The body of the function for a conv call: one oneDNN convolution for its
// shapes (dnnl_conv.inc, through kDnnlConvDeclarations). Its arguments
// (input, weight and output, each at its offset) go to `args`.
std::string PrintConv(const ConvCall& conv, std::vector<BufferRef>& args) {
  args = {{conv.input.buffer, conv.input.offset},
          {conv.weight.buffer, conv.weight.offset},
          {conv.output.buffer, conv.output.offset}};
  return absl::StrFormat(
      "  const int64_t src[8] = %s;\n"
      "  const int64_t weights[8] = %s;\n"
      "  const int64_t dst[8] = %s;\n"
      "  static const int64_t zero_pads[4] = {%s};\n"
      "  static loom_conv_site site;\n"
      "  void* const conv = loom_dnnl_conv_at(&site.convs, src, weights, dst, %d, %d, %d, %d, %d, "
      "zero_pads);\n"
      "  loom_dnnl_conv_run(conv, (const float*)a[0], (const float*)a[1], (float*)a[2]);\n",
      OperandText(conv.input), OperandText(conv.weight), OperandText(conv.output),
      absl::StrJoin(conv.zero_pads, ", "), conv.strides[0], conv.strides[1], conv.dilations[0],
      conv.dilations[1], conv.groups);
}

}  // namespace loom::cpp
