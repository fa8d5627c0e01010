/* The C interface of loom's runtime, for programs in other languages: load a
   compiled model (an artifact, `loom compile --out_dir=D` writes D/model.loom)
   or compile one, ask for its inputs and outputs, run it. Handles are
   opaque; every call returns a status, and on failure loom_last_error()
   says why (the same message the C++ API gives). No C++ type or exception
   crosses this boundary. A model may be run from several threads at once. */
#ifndef LOOM_RUNTIME_LOOM_C_H_
#define LOOM_RUNTIME_LOOM_C_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  LOOM_OK = 0,
  LOOM_INVALID_ARGUMENT = 1,    /* a bad file, model or tensor: the caller's to fix */
  LOOM_NOT_FOUND = 2,           /* a missing file */
  LOOM_FAILED_PRECONDITION = 3, /* something to install, or another CPU */
  LOOM_INTERNAL = 4,            /* loom's own failure */
} loom_status;

typedef enum {
  LOOM_F32 = 0,
  LOOM_F64 = 1,
  LOOM_I32 = 2,
  LOOM_I64 = 3,
  LOOM_BOOL = 4, /* one byte per element */
  LOOM_I8 = 5,
  LOOM_I16 = 6,
  LOOM_U8 = 7,
  LOOM_U16 = 8,
  LOOM_U32 = 9,
  LOOM_U64 = 10,
  LOOM_F16 = 11,  /* IEEE half precision, two bytes per element */
  LOOM_BF16 = 12, /* bfloat16 (the high half of an f32's bits) */
  /* ONNX's (and ml_dtypes') 8- and 4-bit floats, one byte of bits per
     element; FN: no infinity, FNUZ: no infinity and no -0 (0x80 is NaN);
     E8M0: 2^(bits - 127), 0xff NaN. */
  LOOM_F8E4M3FN = 13,
  LOOM_F8E4M3FNUZ = 14,
  LOOM_F8E5M2 = 15,
  LOOM_F8E5M2FNUZ = 16,
  LOOM_F8E8M0 = 17,
  LOOM_F4E2M1 = 18, /* one element per byte (unpacked), in its low 4 bits */
  /* 4- and 2-bit integers, one element per byte (unpacked, unlike ONNX's
     raw data): the value sign- or zero-extended to the byte. */
  LOOM_I4 = 19,
  LOOM_U4 = 20,
  LOOM_I2 = 21,
  LOOM_U2 = 22,
} loom_dtype;

typedef struct loom_model loom_model;

/* A tensor of the caller's: its name, type, shape and memory. */
typedef struct {
  const char* name;
  loom_dtype dtype;
  int rank;
  const int64_t* shape;
  const void* data;
} loom_input;

typedef struct {
  const char* name;
  loom_dtype dtype;
  int rank;
  const int64_t* shape;
  void* data;
} loom_output;

/* The message of this thread's last failed call ("" if none). */
const char* loom_last_error(void);

/* Loads an artifact. On success *model is a handle to free. */
loom_status loom_model_load(const char* path, loom_model** model);

/* Compiles a model file (.pbtxt graph or .onnx) with `pipeline` ("cpu" or a
   pipeline file; NULL: "cpu") and loads it. */
loom_status loom_model_compile(const char* model_path, const char* pipeline, loom_model** model);

/* loom_model_compile with the sizes of a model's named input dims
   (an ONNX dim_param such as "batch_size", a graph input's dim_names):
   dim_names[i] is dim_sizes[i] long, for
   every input that has it. A named dim left without a size, a size for a
   name no input has, a negative size or a name given twice is
   LOOM_INVALID_ARGUMENT naming the dim. */
loom_status loom_model_compile_with_dims(const char* model_path, const char* pipeline,
                                         const char* const* dim_names, const int64_t* dim_sizes,
                                         int num_dims, loom_model** model);

/* The sizes a named dim may take: min to max. */
typedef struct {
  const char* name;
  int64_t min;
  int64_t max;
} loom_dim_bounds;

/* loom_model_compile for the shapes of `inputs` (names, types and shapes;
   their data is not read): a model's named dims take their sizes from
   the inputs that have them, every input sharing a dim giving it the same
   size, within the dim's `bounds` (num_bounds of them, by name; none: any
   size). The model then runs inputs of those shapes; each other shape is a
   compile of its own. With bounds, a caller compiling many shapes: where
   the kernel cache has not met the code of this shape's class, the front
   end also runs at the neighbouring shape so that this compile's kernels
   serve both, and the shapes beyond of that class compile none. A
   disagreement, a size outside its bounds, a named
   dim no input gives, or bounds for a name no input has is
   LOOM_INVALID_ARGUMENT naming the input, the dim and the size or bound. */
loom_status loom_model_compile_for_inputs(const char* model_path, const char* pipeline,
                                          const loom_dim_bounds* bounds, int num_bounds,
                                          const loom_input* inputs, int num_inputs,
                                          loom_model** model);

/* Compiles an ONNX model for every shape of its named dims within `bounds`
   (num_bounds of them, by name; a dim of one size has MIN = MAX) into
   out_dir/model.loom, the model file copied beside it, and loads that (see
   loom_model_bind): what `loom compile --dims=NAME=MIN..MAX,...
   --out_dir=D` does. A dim without bounds is LOOM_INVALID_ARGUMENT naming
   it. */
loom_status loom_model_compile_every_shape(const char* model_path, const char* pipeline,
                                           const loom_dim_bounds* bounds, int num_bounds,
                                           const char* out_dir, loom_model** model);

void loom_model_free(loom_model* model);

int loom_model_num_inputs(const loom_model* model);
int loom_model_num_outputs(const loom_model* model);
/* How many kernel launches a run makes (a fused model's few); 0 for a model
   compiled for every shape, whose bound models say. */
int loom_model_num_launches(const loom_model* model);

/* Input (output) `index`: its name, type and shape, valid while the model
   lives. */
loom_status loom_model_input(const loom_model* model, int index, const char** name,
                             loom_dtype* dtype, int* rank, const int64_t** shape);
loom_status loom_model_output(const loom_model* model, int index, const char** name,
                              loom_dtype* dtype, int* rank, const int64_t** shape);

/* A model compiled for every shape within its named dims' bounds (`loom
   compile --dims=NAME=MIN..MAX,... --out_dir=D` writes D/model.loom, with
   the model file beside it; loom_model_load needs libloom's compiler for
   it) reports -1 for those dims in loom_model_input and loom_model_output,
   and runs at the shapes of each call's inputs: a shape it has not run
   before compiles the front end (milliseconds) and binds kernels the
   artifact holds; the last 8 shapes are kept. Its outputs' shapes follow
   from the inputs': loom_model_bind gives them. */

/* The name of dim `axis` of input `index`: an ONNX model's dim_param for a
   dim whose size is the call's, else "". Valid while the model lives. */
loom_status loom_model_input_dim_name(const loom_model* model, int index, int axis,
                                      const char** name);

/* The model at the shapes of `inputs` (names, types and shapes; their data
   is not read): for a model compiled for every shape, a model of fixed
   shapes, whose loom_model_output gives the outputs' shapes; for any other
   model, another handle to it. Free it with loom_model_free; it may outlive
   `model`. A size outside its dim's bounds or inputs that disagree on a dim
   are LOOM_INVALID_ARGUMENT naming the input, the dim and the bound. */
loom_status loom_model_bind(const loom_model* model, const loom_input* inputs, int num_inputs,
                            loom_model** bound);

/* Runs the model on every input (by name, any order) into the named outputs
   (outputs not named are computed and dropped). A missing, unknown or
   repeated name, another type or shape, or a null pointer is
   LOOM_INVALID_ARGUMENT naming the tensor; nothing runs then. An index
   input holding an index out of range (a gather's, a scatter's) is
   LOOM_INVALID_ARGUMENT naming the node and the index, after the run (the
   outputs are then unspecified; nothing is read or written out of bounds). */
loom_status loom_model_run(const loom_model* model, const loom_input* inputs, int num_inputs,
                           const loom_output* outputs, int num_outputs);

/* loom_model_run's work done by loom's reference interpreter on the model
   as imported, for a model from loom_model_compile (one loaded from an
   artifact has no reference: LOOM_FAILED_PRECONDITION). What `loom run
   --check` compares with. The first call imports the model file again (a
   compiled model keeps no second copy of its weights for it): an error
   then names the file. */
loom_status loom_model_reference_run(const loom_model* model, const loom_input* inputs,
                                     int num_inputs, const loom_output* outputs, int num_outputs);

/* A model file (.pbtxt or .onnx) imported for loom's reference interpreter
   alone, with no native compile: what a caller may run while the kernels
   compile (loom.torch's first call). Slow: plain loops in double. */
typedef struct loom_reference loom_reference;
loom_status loom_reference_load(const char* model_path, loom_reference** reference);
loom_status loom_reference_run(const loom_reference* reference, const loom_input* inputs,
                               int num_inputs, const loom_output* outputs, int num_outputs);
void loom_reference_free(loom_reference* reference);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_RUNTIME_LOOM_C_H_ */
