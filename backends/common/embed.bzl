"""embed_sections: C text kept in a real file, embedded as C++ strings."""

# An awk program over the source file: a line `//@ section kName` starts the
# section kName, which runs to the next such line; every other line that
# starts with //@ is a note for the file's readers, and the lines before the
# first section are its header. Each section becomes `extern const char
# kName[]`, its lines byte for byte, in a raw string literal.
_AWK = """
BEGIN {
  print "// Generated from " src " by embed_sections. Do not edit." > header
  print "#pragma once" > header
  print "namespace " ns " {" > header
  print "// Generated from " src " by embed_sections. Do not edit." > source
  print "#include \\"" header_include "\\"" > source
  print "namespace " ns " {" > source
  open = 0
}
/^\\/\\/@ section / {
  if (open) print ")loom_embed\\";" > source
  print "extern const char " $3 "[];" > header
  printf "extern const char %s[] = R\\"loom_embed(", $3 > source
  open = 1
  next
}
/^\\/\\/@/ { next }
{
  if (index($0, ")loom_embed\\"")) {
    print src ":" NR ": contains the raw string delimiter )loom_embed\\"" > "/dev/stderr"
    exit 1
  }
  if (open) print $0 > source
}
END {
  if (open) print ")loom_embed\\";" > source
  print "}  // namespace " ns > header
  print "}  // namespace " ns > source
}
"""

def embed_sections(name, src, namespace):
    """The sections of `src` as C++ strings in `namespace`: cc_library `name`.

    Its header `name`.h declares each section's `extern const char kName[]`.
    """
    native.genrule(
        name = name + "_gen",
        srcs = [src],
        outs = [
            name + ".h",
            name + ".cc",
        ],
        cmd = ("awk -v src=$< -v ns=%s -v header=$(location %s.h) -v source=$(location %s.cc) " +
               "-v header_include=%s/%s.h '%s' $<") % (
            namespace,
            name,
            name,
            native.package_name(),
            name,
            _AWK.replace("$", "$$"),
        ),
    )
    native.cc_library(
        name = name,
        srcs = [name + ".cc"],
        hdrs = [name + ".h"],
    )
