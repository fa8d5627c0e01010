// The text of the helper functions that generated code calls (c_scalar.h:
// CoreHelpers, HelperText and the f32 functions shared with explicit
// vectors): c_helpers.inc's sections, with their placeholders filled in;
// c_scalar.cc has the expressions that call them.

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "backends/common/c_helpers_text.h"
#include "backends/common/c_scalar.h"
#include "ir/shape_constants.h"

namespace loom::cscalar {

namespace {

// A section of c_helpers.inc whose functions are declared with `qualifier`.
std::string Qualified(const char* section, absl::string_view qualifier) {
  return absl::StrReplaceAll(section, {{"$qualifier", qualifier}});
}

// The section of c_helpers.inc that defines `helper`, or null for the
// templates (kFloatExp, kFloatTanh, kFloatErf), which HelperText fills in.
const char* HelperSection(Helper helper) {
  switch (helper) {
    case kIntMod:
      return kIntModHelper;
    case kIntFmod:
      return kIntFmodHelper;
    case kFloatMod:
      return kFloatModHelper;
    case kDoubleMod:
      return kDoubleModHelper;
    case kFloatFmod:
      return kFloatFmodHelper;
    case kFloatFloorMod:
      return kFloatFloorModHelper;
    case kUIntDiv:
      return kUIntDivHelper;
    case kUIntMod:
      return kUIntModHelper;
    case kUIntPow:
      return kUIntPowHelper;
    case kFloatLog:
      return kFloatLogHelper;
    case kCheckIndex:
      return kCheckIndexHelper;
    case kFloatBits:
      return kFloatBitsHelper;
    default:
      return nullptr;
  }
}

}  // namespace

std::string CoreHelpers(absl::string_view q) { return Qualified(kCoreHelpers, q); }

std::string NarrowFloatHelpers(absl::string_view q) { return Qualified(kNarrowFloatHelpers, q); }

std::string HelperText(Helper helper, absl::string_view q) {
  switch (helper) {
    case kFloatExp:
      return absl::StrReplaceAll(
          kFloatExpHelper, {{"$qualifier", q}, {"$expf_reduction\n", ExpfReduction("float")}});
    case kFloatTanh:
      return TanhfFunction(q, "loom_tanhf", "float", "loom_expf");
    case kFloatErf:
      return ErffFunction(q, "loom_erff", "float");
    default:
      break;
  }
  const char* section = HelperSection(helper);
  return section == nullptr ? "" : Qualified(section, q);
}

std::string CheckIndexExpr(const std::string& index, int64_t extent, int32_t site,
                           const std::string& errors, HelperSet& helpers) {
  helpers.set(kCheckIndex);
  return absl::StrCat("loom_check_index((int64_t)", index, ", ", MarkShapeConstant(extent), ", ",
                      site, ", ", errors, ")");
}

std::string TanhfFunction(absl::string_view qualifier, absl::string_view name,
                          absl::string_view type, absl::string_view exp) {
  return absl::StrReplaceAll(
      kTanhfFunction, {{"$qualifier", qualifier}, {"$type", type}, {"$name", name}, {"$exp", exp}});
}

std::string ErffFunction(absl::string_view qualifier, absl::string_view name,
                         absl::string_view type) {
  return absl::StrReplaceAll(kErffFunction,
                             {{"$qualifier", qualifier}, {"$type", type}, {"$name", name}});
}

std::string ExpfReduction(absl::string_view type) {
  return absl::StrReplaceAll(kExpfReduction, {{"$type", type}});
}

}  // namespace loom::cscalar
