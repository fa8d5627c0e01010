"""loom_cc_library: a model compiled by loom as a build action, as a cc_library.

    load("//tools:loom.bzl", "loom_cc_library")

    loom_cc_library(
        name = "lstm",
        model = "lstm.onnx",         # or a loom graph (.pbtxt)
        class_name = "Lstm",         # the class lstm.h declares
    )

gives a cc_library whose header `lstm.h` declares `class Lstm` with
`static absl::StatusOr<Lstm> Create()` and a typed `Run(inputs..., outputs...)`
(tools/aot.h). The action's inputs are the model, the pipeline and the loom
compiler, so a remote cache or executor can share it.
"""

# The kernels' flags, as codegen-cpp gives them to its native compiler
# (backends/cpp/codegen.cc, NativeFlags), for the instruction set `march`.
def _kernel_copts(march):
    return [
        "-O3",
        "-march=" + march,
        "-fopenmp",
        "-fno-math-errno",
        "-fwrapv",
        "-fno-strict-aliasing",
        "-fno-trapping-math",
        "-w",  # generated code
    ]

def loom_cc_library(name, model, pipeline = None, class_name = "Model", march = "native", **kwargs):
    """A cc_library of `model` compiled by loom.

    Args:
      name: the library; its header is <name>.h.
      model: the model file (.onnx or a loom graph .pbtxt).
      pipeline: a pipeline file (default: loom's built-in "cpu"); its
        codegen-cpp must target `march`.
      class_name: the class the header declares.
      march: the instruction set the kernels are built for (-march); "native"
        is the building machine's, so build where the program runs or name
        one ("x86-64-v3", "haswell", "armv8-a").
      **kwargs: passed to the cc_library (visibility, tags, ...).
    """
    srcs = [model] + ([pipeline] if pipeline else [])
    pipeline_flag = " --pipeline=$(execpath %s)" % pipeline if pipeline else ""
    native.genrule(
        name = name + "_loom",
        srcs = srcs,
        outs = [name + ".h", name + ".cc"],
        tools = ["//tools:loom"],
        cmd = ("$(execpath //tools:loom) compile --quiet --model=$(execpath %s)%s " +
               "--aot=$(RULEDIR)/%s --aot_class=%s > /dev/null") % (
            model,
            pipeline_flag,
            name,
            class_name,
        ),
        message = "loom compiling %s" % model,
    )
    native.cc_library(
        name = name,
        srcs = [name + ".cc"],
        hdrs = [name + ".h"],
        copts = _kernel_copts(march),
        linkopts = [
            "-fopenmp",
            # The libraries the kernels' products call (oneDNN for f32,
            # OpenBLAS for f64 and for f32 ones that oneDNN runs slowly
            # on AVX2), linked when they do.
            "-Wl,--push-state,--as-needed",
            "-l:libdnnl.so.2",
            "-l:libopenblas.so.0",
            "-Wl,--pop-state",
        ],
        deps = [
            "//runtime:artifact_cc_proto",
            "//runtime:model",
            "//third_party:absl",
        ],
        **kwargs
    )
