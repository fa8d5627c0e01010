// A stand-in for oneDNN that native_library_test warms up: it counts the
// products it is asked for and keeps the last one's size and result.
#include <cstdint>

namespace {
int64_t products = 0;
int64_t last_size = 0;
float last_corner = 0;
}  // namespace

extern "C" int dnnl_sgemm(char trans_a, char trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                          float* c, int64_t ldc) {
  ++products;
  last_size = m * n * k;
  float sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += a[i] * b[i * ldb];
  c[0] = alpha * sum;
  last_corner = c[0];
  return 0;
}

extern "C" int64_t sgemm_products() { return products; }
extern "C" int64_t sgemm_last_size() { return last_size; }
extern "C" float sgemm_last_corner() { return last_corner; }
