/* loom_c.h from C: the header compiles as C, and a compiled model runs and
   reports its errors through status codes and loom_last_error(). */
#define _POSIX_C_SOURCE 200809L
#include "runtime/loom_c.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define EXPECT(condition)                                                                     \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      fprintf(stderr, "%s:%d: failed: %s (last error: %s)\n", __FILE__, __LINE__, #condition, \
              loom_last_error());                                                             \
      ++failures;                                                                             \
    }                                                                                         \
  } while (0)

/* Copies the file at `from` to `to`; 0 on success. */
static int CopyFile(const char* from, const char* to) {
  FILE* in = fopen(from, "rb");
  FILE* out = fopen(to, "wb");
  int status = in == NULL || out == NULL;
  char buffer[65536];
  size_t got;
  while (!status && (got = fread(buffer, 1, sizeof buffer, in)) > 0) {
    status = fwrite(buffer, 1, got, out) != got;
  }
  if (in != NULL) fclose(in);
  if (out != NULL && fclose(out) != 0) status = 1;
  return status;
}

int main(void) {
  /* The kernel cache: Bazel's test sandbox has no $HOME. */
  const char* tmp = getenv("TEST_TMPDIR");
  char cache[4096];
  snprintf(cache, sizeof cache, "%s/cache", tmp != NULL ? tmp : "/tmp");
  setenv("LOOM_CACHE_DIR", cache, 1);

  loom_model* model = NULL;
  EXPECT(loom_model_load("/no/such/model.loom", &model) == LOOM_NOT_FOUND);
  EXPECT(strstr(loom_last_error(), "/no/such/model.loom") != NULL);
  EXPECT(loom_model_compile("examples/lstm_l2_h64.pbtxt", NULL, &model) == LOOM_OK);
  if (model == NULL) return 1;
  EXPECT(loom_model_num_inputs(model) == 1);
  EXPECT(loom_model_num_outputs(model) == 3);

  const char* name = NULL;
  loom_dtype dtype;
  int rank = 0;
  const int64_t* shape = NULL;
  EXPECT(loom_model_input(model, 0, &name, &dtype, &rank, &shape) == LOOM_OK);
  EXPECT(strcmp(name, "x") == 0 && dtype == LOOM_F32 && rank == 3 && shape[2] == 32);
  EXPECT(loom_model_input(model, 1, &name, &dtype, &rank, &shape) == LOOM_INVALID_ARGUMENT);

  static float x[2 * 16 * 32], y[2 * 16 * 64], reference[2 * 16 * 64];
  for (int i = 0; i < 2 * 16 * 32; ++i) x[i] = (float)sin(0.01 * i);
  const int64_t x_shape[] = {2, 16, 32}, y_shape[] = {2, 16, 64};
  const loom_input inputs[] = {{"x", LOOM_F32, 3, x_shape, x}};
  const loom_output outputs[] = {{"y", LOOM_F32, 3, y_shape, y}};
  const loom_output references[] = {{"y", LOOM_F32, 3, y_shape, reference}};
  EXPECT(loom_model_run(model, inputs, 1, outputs, 1) == LOOM_OK);
  EXPECT(loom_model_reference_run(model, inputs, 1, references, 1) == LOOM_OK);
  double worst = 0;
  for (int i = 0; i < 2 * 16 * 64; ++i) {
    const double error = fabs(y[i] - reference[i]) - 1e-4 * fabs(reference[i]);
    if (error > worst) worst = error;
  }
  EXPECT(worst <= 1e-5);

  /* The reference interpreter alone, without a compile. */
  loom_reference* reference_only = NULL;
  static float y_reference_only[2 * 16 * 64];
  const loom_output reference_only_outputs[] = {{"y", LOOM_F32, 3, y_shape, y_reference_only}};
  EXPECT(loom_reference_load("examples/lstm_l2_h64.pbtxt", &reference_only) == LOOM_OK);
  EXPECT(loom_reference_run(reference_only, inputs, 1, reference_only_outputs, 1) == LOOM_OK);
  EXPECT(memcmp(y_reference_only, reference, sizeof reference) == 0);
  EXPECT(loom_reference_load("/no/such/model.pbtxt", &reference_only) != LOOM_OK);
  loom_reference_free(reference_only);

  const int64_t wrong_shape[] = {2, 16, 31};
  const loom_input wrong[] = {{"x", LOOM_F32, 3, wrong_shape, x}};
  EXPECT(loom_model_run(model, wrong, 1, outputs, 1) == LOOM_INVALID_ARGUMENT);
  EXPECT(strstr(loom_last_error(), "input 'x' is f32[2, 16, 31]") != NULL);
  const loom_input unnamed[] = {{NULL, LOOM_F32, 3, x_shape, x}};
  EXPECT(loom_model_run(model, unnamed, 1, outputs, 1) == LOOM_INVALID_ARGUMENT);
  const loom_input bad_dtype[] = {{"x", (loom_dtype)42, 3, x_shape, x}};
  EXPECT(loom_model_run(model, bad_dtype, 1, outputs, 1) == LOOM_INVALID_ARGUMENT);
  EXPECT(loom_model_run(NULL, inputs, 1, outputs, 1) == LOOM_INVALID_ARGUMENT);
  loom_model_free(model);
  loom_model_free(NULL);

  /* A compiled model keeps no copy of the graph as imported: its first
     reference run imports the file again, and fails naming it when it is
     gone. */
  char copy[4096];
  snprintf(copy, sizeof copy, "%s/lstm_copy.pbtxt", tmp != NULL ? tmp : "/tmp");
  EXPECT(CopyFile("examples/lstm_l2_h64.pbtxt", copy) == 0);
  model = NULL;
  EXPECT(loom_model_compile(copy, NULL, &model) == LOOM_OK);
  if (model == NULL) return 1;
  EXPECT(remove(copy) == 0);
  EXPECT(loom_model_run(model, inputs, 1, outputs, 1) == LOOM_OK);
  EXPECT(loom_model_reference_run(model, inputs, 1, references, 1) != LOOM_OK);
  EXPECT(strstr(loom_last_error(), copy) != NULL);
  loom_model_free(model);

  /* An index input out of range: the run fails naming the node and the
     index; the next run, in range, succeeds. */
  EXPECT(loom_model_compile("tests/index_range/gather.pbtxt", NULL, &model) == LOOM_OK);
  if (model == NULL) return 1;
  int64_t ids[6] = {0, 4, 5, 1, 2, 3};
  static float rows[2 * 3 * 4];
  const int64_t ids_shape[] = {2, 3}, rows_shape[] = {2, 3, 4};
  const loom_input lookup[] = {{"ids", LOOM_I64, 2, ids_shape, ids}};
  const loom_output looked_up[] = {{"y", LOOM_F32, 3, rows_shape, rows}};
  EXPECT(loom_model_run(model, lookup, 1, looked_up, 1) == LOOM_INVALID_ARGUMENT);
  EXPECT(strcmp(loom_last_error(),
                "node 'lookup' (gather): index 5 is out of range for axis 0 of size 5") == 0);
  ids[2] = -5;
  EXPECT(loom_model_run(model, lookup, 1, looked_up, 1) == LOOM_OK);
  loom_model_free(model);

  /* Named dims: sized at compile, or refused naming the input and the dim. */
  const char* dim_names[] = {"batch", "seq"};
  const int64_t dim_sizes[] = {2, 3};
  model = NULL;
  EXPECT(loom_model_compile_with_dims("tests/bad_inputs/named_dims.onnx", NULL, dim_names,
                                      dim_sizes, 1, &model) == LOOM_INVALID_ARGUMENT);
  EXPECT(strstr(loom_last_error(), "graph input 'x': dim 1 is the named dim 'seq'") != NULL);
  EXPECT(loom_model_compile_with_dims("tests/bad_inputs/named_dims.onnx", NULL, NULL, dim_sizes, 2,
                                      &model) == LOOM_INVALID_ARGUMENT);
  EXPECT(loom_model_compile_with_dims("tests/bad_inputs/named_dims.onnx", NULL, dim_names,
                                      dim_sizes, 2, &model) == LOOM_OK);
  if (model == NULL) return 1;
  EXPECT(loom_model_input(model, 1, &name, &dtype, &rank, &shape) == LOOM_OK);
  EXPECT(strcmp(name, "y") == 0 && rank == 3 && shape[0] == 2 && shape[1] == 3 && shape[2] == 1);
  loom_model_free(model);

  /* Or by the shapes of the inputs to run, within bounds. */
  const int64_t named_x[] = {4, 5, 4}, named_y[] = {4, 5, 1}, other_y[] = {4, 6, 1};
  loom_input shaped[] = {{"x", LOOM_F32, 3, named_x, NULL}, {"y", LOOM_F32, 3, named_y, NULL}};
  const loom_dim_bounds bounds[] = {{"seq", 1, 8}};
  model = NULL;
  EXPECT(loom_model_compile_for_inputs("tests/bad_inputs/named_dims.onnx", NULL, bounds, 1, shaped,
                                       2, &model) == LOOM_OK);
  if (model == NULL) return 1;
  EXPECT(loom_model_input(model, 1, &name, &dtype, &rank, &shape) == LOOM_OK);
  EXPECT(shape[0] == 4 && shape[1] == 5 && shape[2] == 1);
  loom_model_free(model);
  const loom_dim_bounds narrow[] = {{"seq", 1, 4}};
  EXPECT(loom_model_compile_for_inputs("tests/bad_inputs/named_dims.onnx", NULL, narrow, 1, shaped,
                                       2, &model) == LOOM_INVALID_ARGUMENT);
  EXPECT(strstr(loom_last_error(),
                "graph input 'x': dim 1, the named dim 'seq', is 5, outside its bounds 1..4") !=
         NULL);
  shaped[1].shape = other_y;
  EXPECT(loom_model_compile_for_inputs("tests/bad_inputs/named_dims.onnx", NULL, NULL, 0, shaped, 2,
                                       &model) == LOOM_INVALID_ARGUMENT);
  EXPECT(strstr(loom_last_error(), "graph input 'y': dim 1, the named dim 'seq', is 6 but 5") !=
         NULL);
  EXPECT(loom_model_compile_for_inputs("tests/bad_inputs/named_dims.onnx", NULL, NULL, 1, shaped, 2,
                                       &model) == LOOM_INVALID_ARGUMENT);
  const int64_t negative[] = {4, -5, 4};
  shaped[0].shape = negative;
  EXPECT(loom_model_compile_for_inputs("tests/bad_inputs/named_dims.onnx", NULL, NULL, 0, shaped, 2,
                                       &model) == LOOM_INVALID_ARGUMENT);
  EXPECT(strstr(loom_last_error(), "input 'x' has shape [4,-5,4], with a negative dim") != NULL);

  /* An artifact compiled for every shape within bounds (by the loom command,
     a data dependency) takes each call's sizes. */
  char command[8192], every_shape[4096];
  snprintf(every_shape, sizeof every_shape, "%s/every_shape", tmp != NULL ? tmp : "/tmp");
  snprintf(command, sizeof command,
           "tools/loom compile --model=tests/bad_inputs/named_dims.onnx "
           "--dims=batch=1..4,seq=1..8 --out_dir=%s --quiet >/dev/null",
           every_shape);
  EXPECT(system(command) == 0);
  strncat(every_shape, "/model.loom", sizeof every_shape - strlen(every_shape) - 1);
  model = NULL;
  EXPECT(loom_model_load(every_shape, &model) == LOOM_OK);
  if (model == NULL) return 1;
  EXPECT(loom_model_input(model, 0, &name, &dtype, &rank, &shape) == LOOM_OK);
  EXPECT(rank == 3 && shape[0] == -1 && shape[1] == -1 && shape[2] == 4);
  const char* dim = NULL;
  EXPECT(loom_model_input_dim_name(model, 0, 1, &dim) == LOOM_OK && strcmp(dim, "seq") == 0);
  EXPECT(loom_model_input_dim_name(model, 0, 2, &dim) == LOOM_OK && strcmp(dim, "") == 0);
  EXPECT(loom_model_input_dim_name(model, 0, 3, &dim) == LOOM_INVALID_ARGUMENT);
  static float dx[3 * 7 * 4], dy[3 * 7], dz[3 * 7 * 4];
  for (int i = 0; i < 3 * 7 * 4; ++i) dx[i] = (float)i;
  for (int i = 0; i < 3 * 7; ++i) dy[i] = (float)(1000 * i);
  const int64_t dx_shape[] = {3, 7, 4}, dy_shape[] = {3, 7, 1};
  const loom_input every_inputs[] = {{"x", LOOM_F32, 3, dx_shape, dx},
                                     {"y", LOOM_F32, 3, dy_shape, dy}};
  loom_model* bound = NULL;
  EXPECT(loom_model_bind(model, every_inputs, 2, &bound) == LOOM_OK);
  if (bound == NULL) return 1;
  EXPECT(loom_model_output(bound, 0, &name, &dtype, &rank, &shape) == LOOM_OK);
  EXPECT(strcmp(name, "z") == 0 && shape[0] == 3 && shape[1] == 7 && shape[2] == 4);
  loom_model_free(bound);
  const loom_output every_outputs[] = {{"z", LOOM_F32, 3, dx_shape, dz}};
  EXPECT(loom_model_run(model, every_inputs, 2, every_outputs, 1) == LOOM_OK);
  EXPECT(dz[4 * 9 + 2] == dx[4 * 9 + 2] + dy[9]);
  const int64_t wide_x[] = {5, 7, 4}, wide_y[] = {5, 7, 1};
  const loom_input wide[] = {{"x", LOOM_F32, 3, wide_x, dx}, {"y", LOOM_F32, 3, wide_y, dy}};
  EXPECT(loom_model_bind(model, wide, 2, &bound) == LOOM_INVALID_ARGUMENT);
  EXPECT(strstr(loom_last_error(), "the named dim 'batch', is 5, outside its bounds 1..4") != NULL);
  loom_model_free(model);

  if (failures == 0) printf("loom_c_test: all passed\n");
  return failures == 0 ? 0 : 1;
}
