#include "ir/expr.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <numeric>
#include <type_traits>
#include <utility>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "ir/expr_internal.h"
#include "ir/expr_map.h"

// Canonical form (what every constructor returns):
//   atom      x_i, FloorDiv(dividend, d) or Mod(dividend, d)
//   monomial  an atom, or a kMul of two or more atoms in structural order
//   term      a monomial, or a kMul [coefficient, atoms...] (coefficient is
//             neither 0 nor 1)
//   sum       a constant, a term, or a kAdd of at least two operands: terms
//             with distinct monomials in structural order, then the constant
//             if it is not 0.
// Products of sums are fully expanded, so equal polynomials over the atoms are
// the same node. A FloorDiv/Mod dividend by d is reduced: its coefficients lie
// in [1, d), its constant in [0, d), and d shares no factor with all its
// coefficients (so (e + d*v) // d == e // d + v for every e and v). Hence, for
// non-negative variables, every dividend is non-negative and C's / and % agree
// with floor semantics (see ToCpp).
//
// The order is structural (kind, operands, value), not by creation id, so the
// canonical form and its printed text do not depend on construction order.

namespace loom {

using expr_internal::AddIntervals;
using expr_internal::Bounded;
using expr_internal::Die;
using expr_internal::ExprBounds;
using expr_internal::FloorDivInt;
using expr_internal::FloorModInt;
using expr_internal::Interval;
using expr_internal::ScaleInterval;

namespace {

// A total order on the nodes of one context that depends on structure only.
int Compare(Expr a, Expr b) {
  if (a == b) return 0;
  if (a->kind() != b->kind()) return a->kind() < b->kind() ? -1 : 1;
  absl::Span<const Expr> x = a->operands();
  absl::Span<const Expr> y = b->operands();
  const size_t n = std::min(x.size(), y.size());
  for (size_t i = 0; i < n; ++i) {
    if (int c = Compare(x[i], y[i])) return c;
  }
  if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
  if (a->value() != b->value()) return a->value() < b->value() ? -1 : 1;
  return 0;
}

bool Before(Expr a, Expr b) { return Compare(a, b) < 0; }

// The atoms of a monomial. `mono` must outlive the span.
absl::Span<const Expr> AtomsOf(const Expr& mono) {
  if (mono->kind() == ExprKind::kMul) return mono->operands();
  return absl::Span<const Expr>(&mono, 1);
}

// The interning key: a node's kind, value and operand pointers.
struct NodeKey {
  ExprKind kind;
  int64_t value;
  absl::Span<const Expr> operands;

  template <typename H>
  friend H AbslHashValue(H h, const NodeKey& key) {
    h = H::combine(std::move(h), key.kind, key.value, key.operands.size());
    return H::combine_contiguous(std::move(h), key.operands.data(), key.operands.size());
  }
};

NodeKey KeyOf(Expr e) { return {e->kind(), e->value(), e->operands()}; }

bool SameKey(const NodeKey& a, const NodeKey& b) {
  return a.kind == b.kind && a.value == b.value &&
         std::equal(a.operands.begin(), a.operands.end(), b.operands.begin(), b.operands.end());
}

// An interned node with its key's hash, kept so that probing and growing
// the table read no node whose hash differs.
struct Slot {
  Expr node = nullptr;
  size_t hash = 0;
};

// The interned nodes by key: open addressing with linear probing, at most
// half full. A lookup reads one run of slots and, where a hash agrees, that
// node. (absl's flat_hash_set reads a separate control byte first: a third
// cache miss per lookup once the table is larger than the cache, which a
// million-buffer program's is: interning took 15% of the compile of a
// million-buffer LSTM, 12% with this table).
class InternTable {
 public:
  // The slot holding the node of `key`, or the empty slot where it goes.
  // Only Claim may fill an empty slot, before the next call.
  Slot& Find(const NodeKey& key, size_t hash) {
    if (2 * (size_ + 1) > slots_.size()) Grow();
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.node == nullptr || (slot.hash == hash && SameKey(KeyOf(slot.node), key))) {
        return slot;
      }
    }
  }
  // Fills the empty slot that Find returned.
  void Claim(Slot& slot, Expr node, size_t hash) {
    slot = Slot{node, hash};
    ++size_;
  }

 private:
  void Grow() {
    std::vector<Slot> old(std::max<size_t>(2 * slots_.size(), 1024));
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.node == nullptr) continue;
      size_t i = slot.hash & mask_;
      while (slots_[i].node != nullptr) i = (i + 1) & mask_;
      slots_[i] = slot;
    }
  }

  std::vector<Slot> slots_;  // a power of two of them
  size_t mask_ = 0;
  size_t size_ = 0;
};

// coefficient * monomial, as an intermediate of canonicalisation.
struct Term {
  Expr mono;
  int64_t coeff;  // never 0 inside a Poly
  Expr node;      // the term's node when already known, else nullptr
};

// A sum of terms with distinct monomials in structural order, plus a constant.
struct Poly {
  absl::InlinedVector<Term, 4> terms;
  int64_t constant = 0;
};

}  // namespace

// ===========================================================================
// Construction and canonicalisation.
// ===========================================================================

struct ExprContext::Impl {
  class RangeSimplifier;  // the range-based rules, below

  // Interned nodes, each followed by its operand list, in blocks that never
  // move: a node costs no allocation of its own, and comparing it with a
  // key reads one place.
  std::vector<std::unique_ptr<char[]>> blocks;
  size_t block_used = kBlockSize;  // no block yet
  int32_t num_nodes = 0;
  static constexpr size_t kBlockSize = 1 << 16;
  InternTable interned;  // every node but constants and sums with one
  // The sums with a constant, by base and constant (InternSumWithConstant).
  absl::flat_hash_map<Expr, absl::btree_map<int64_t, Expr>> sums_by_base;
  std::vector<Expr> vars;  // vars[i] is x_i once made
  // True while Simplify runs: sums then also recombine div/mod pairs.
  bool simplifying = false;
  // Memo tables kept between calls of Substitute and Simplify (which run
  // once per load while lowering), so that a call allocates nothing once
  // they have grown. A call moves a table out and back; a nested call would
  // find it empty and simply grow its own.
  ExprMap<Expr> spare_substitutions;
  ExprMap<Expr> spare_simplified;
  ExprMap<Interval> spare_bounds;

  Expr Intern(ExprKind kind, int64_t value, absl::Span<const Expr> operand_list) {
    const NodeKey key{kind, value, operand_list};
    const size_t hash = absl::Hash<NodeKey>()(key);
    Slot& recent = recently_interned[hash % kRecent];
    if (recent.node != nullptr && recent.hash == hash && SameKey(KeyOf(recent.node), key)) {
      return recent.node;
    }
    Slot& slot = interned.Find(key, hash);
    if (slot.node == nullptr) {
      interned.Claim(slot, NewNode(kind, value, operand_list), hash);
    }
    recent = slot;
    return slot.node;
  }

  Expr NewNode(ExprKind kind, int64_t value, absl::Span<const Expr> operand_list) {
    static_assert(sizeof(ExprNode) % alignof(Expr) == 0, "operands align");
    static_assert(std::is_trivially_destructible<ExprNode>::value,
                  "freeing the blocks must be enough");
    const size_t bytes = sizeof(ExprNode) + operand_list.size() * sizeof(Expr);
    if (bytes > kBlockSize - block_used) {
      // A node too large for a block gets a block of its own size.
      blocks.emplace_back(new char[std::max(kBlockSize, bytes)]);
      block_used = 0;
    }
    char* place = blocks.back().get() + block_used;
    block_used += bytes;
    Expr* operands = reinterpret_cast<Expr*>(place + sizeof(ExprNode));
    std::copy(operand_list.begin(), operand_list.end(), operands);
    return new (place)
        ExprNode(kind, value, absl::Span<const Expr>(operands, operand_list.size()), num_nodes++);
  }

  // A direct-mapped cache in front of `interned`, which is large and so
  // slow to probe: a program reuses few expressions at a time (those of the
  // shapes and views at hand), and these stay in the cache.
  static constexpr size_t kRecent = 4096;
  std::vector<Slot> recently_interned = std::vector<Slot>(kRecent);

  // Small constants come up all the time (coefficients, offsets, sizes), so
  // they are found in an array rather than in the intern table.
  static constexpr int64_t kSmallMin = -64;
  static constexpr int64_t kSmallEnd = 1024;
  Expr small_consts[kSmallEnd - kSmallMin] = {};

  // Larger constants, in order: like the sums with a constant, they are
  // the offsets of an unrolled loop's steps, made and revisited in order.
  absl::btree_map<int64_t, Expr> large_consts;

  Expr Const(int64_t v) {
    if (v < kSmallMin || v >= kSmallEnd) {
      Expr& c = large_consts[v];
      if (c == nullptr) c = NewNode(ExprKind::kConst, v, {});
      return c;
    }
    Expr& c = small_consts[v - kSmallMin];
    if (c == nullptr) c = NewNode(ExprKind::kConst, v, {});
    return c;
  }

  Expr Var(int index) {
    if (index < 0) Die(absl::StrCat("negative variable index ", index));
    if (index >= static_cast<int>(vars.size())) vars.resize(index + 1);
    if (vars[index] == nullptr) {
      vars[index] = Intern(ExprKind::kVar, index, {});
    }
    return vars[index];
  }

  // --- Between nodes and polynomials.

  Term SplitTerm(Expr term) {
    if (term->kind() == ExprKind::kMul && term->operands()[0]->is_const()) {
      absl::Span<const Expr> atoms = term->operands().subspan(1);
      return {Monomial(atoms), term->operands()[0]->value(), term};
    }
    return {term, 1, term};
  }

  Expr Monomial(absl::Span<const Expr> atoms) {
    if (atoms.size() == 1) return atoms[0];
    return Intern(ExprKind::kMul, 0, atoms);
  }

  Poly ToPoly(Expr e) {
    Poly p;
    if (e->is_const()) {
      p.constant = e->value();
    } else if (e->kind() == ExprKind::kAdd) {
      for (Expr operand : e->operands()) {
        if (operand->is_const()) {
          p.constant = operand->value();
        } else {
          p.terms.push_back(SplitTerm(operand));
        }
      }
    } else {
      p.terms.push_back(SplitTerm(e));
    }
    return p;
  }

  Expr TermNode(const Term& t) {
    if (t.node != nullptr) return t.node;
    if (t.coeff == 1) return t.mono;
    absl::InlinedVector<Expr, 4> operands = {Const(t.coeff)};
    for (Expr atom : AtomsOf(t.mono)) operands.push_back(atom);
    return Intern(ExprKind::kMul, 0, operands);
  }

  Expr FromPoly(Poly p) {
    if (simplifying) Recombine(p);
    if (p.terms.empty()) return Const(p.constant);
    if (p.terms.size() == 1 && p.constant == 0) return TermNode(p.terms[0]);
    absl::InlinedVector<Expr, 8> operands;
    for (const Term& t : p.terms) operands.push_back(TermNode(t));
    if (p.constant != 0) return InternSumWithConstant(operands, p.constant);
    return Intern(ExprKind::kAdd, 0, operands);
  }

  // The sum of `terms` (canonical, in order) and `constant` (not 0). Such
  // sums are kept apart from the intern table, by their other terms (the
  // base) and then by the constant, in order: an unrolled loop makes
  // millions that differ only in the constant (the offset of each step's
  // rows), and revisits them a layer later in the order it made them, so
  // that each is found beside the last one found, where in the intern
  // table it was a cache miss (two, with its constant's).
  Expr InternSumWithConstant(absl::Span<const Expr> terms, int64_t constant) {
    const Expr base = terms.size() == 1 ? terms[0] : Intern(ExprKind::kAdd, 0, terms);
    Expr& sum = sums_by_base[base][constant];
    if (sum == nullptr) {
      absl::InlinedVector<Expr, 8> operands(terms.begin(), terms.end());
      operands.push_back(Const(constant));
      sum = NewNode(ExprKind::kAdd, 0, operands);
    }
    return sum;
  }

  // --- Polynomial arithmetic on sorted term lists.

  // a + scale * b, by merging the two sorted term lists.
  static Poly Combine(const Poly& a, const Poly& b, int64_t scale) {
    Poly sum;
    sum.constant = a.constant + scale * b.constant;
    size_t i = 0, j = 0;
    auto push_b = [&](const Term& t) {
      sum.terms.push_back({t.mono, scale * t.coeff, scale == 1 ? t.node : nullptr});
    };
    while (i < a.terms.size() && j < b.terms.size()) {
      const int order = Compare(a.terms[i].mono, b.terms[j].mono);
      if (order < 0) {
        sum.terms.push_back(a.terms[i++]);
      } else if (order > 0) {
        push_b(b.terms[j++]);
      } else {
        const int64_t coeff = a.terms[i].coeff + scale * b.terms[j].coeff;
        if (coeff != 0) sum.terms.push_back({a.terms[i].mono, coeff, nullptr});
        ++i;
        ++j;
      }
    }
    for (; i < a.terms.size(); ++i) sum.terms.push_back(a.terms[i]);
    for (; j < b.terms.size(); ++j) push_b(b.terms[j]);
    return sum;
  }

  static Poly Scale(Poly p, int64_t factor) {  // factor != 0
    if (factor == 1) return p;
    for (Term& t : p.terms) {
      t.coeff *= factor;
      t.node = nullptr;
    }
    p.constant *= factor;
    return p;
  }

  // Sorts terms by monomial, merges equal monomials and drops zeros.
  static void Normalize(Poly& p) {
    std::sort(p.terms.begin(), p.terms.end(),
              [](const Term& a, const Term& b) { return Before(a.mono, b.mono); });
    size_t out = 0;
    for (size_t i = 0; i < p.terms.size();) {
      Term t = p.terms[i];
      size_t j = i + 1;
      for (; j < p.terms.size() && p.terms[j].mono == t.mono; ++j) {
        t.coeff += p.terms[j].coeff;
        t.node = nullptr;
      }
      if (t.coeff != 0) p.terms[out++] = t;
      i = j;
    }
    p.terms.resize(out);
  }

  Expr MultiplyMonomials(Expr a, Expr b) {
    absl::Span<const Expr> x = AtomsOf(a);
    absl::Span<const Expr> y = AtomsOf(b);
    absl::InlinedVector<Expr, 8> atoms;
    std::merge(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(atoms), Before);
    return Intern(ExprKind::kMul, 0, atoms);
  }

  // Fully expanded product.
  Poly Multiply(const Poly& a, const Poly& b) {
    Poly product;
    product.constant = a.constant * b.constant;
    for (const Term& t : a.terms) {
      if (b.constant != 0) {
        product.terms.push_back({t.mono, t.coeff * b.constant, nullptr});
      }
      for (const Term& u : b.terms) {
        product.terms.push_back({MultiplyMonomials(t.mono, u.mono), t.coeff * u.coeff, nullptr});
      }
    }
    if (a.constant != 0) {
      for (const Term& u : b.terms) {
        product.terms.push_back({u.mono, a.constant * u.coeff, nullptr});
      }
    }
    Normalize(product);
    return product;
  }

  // The sum of `exprs` in O(n log n) over their terms.
  Expr Sum(absl::Span<const Expr> exprs) {
    Poly sum;
    for (Expr e : exprs) {
      Poly p = ToPoly(e);
      sum.constant += p.constant;
      for (const Term& t : p.terms) sum.terms.push_back(t);
    }
    Normalize(sum);
    return FromPoly(std::move(sum));
  }

  // Rewrites k*(e % c) + k*c*(e // c) as k*e, which holds for floor
  // semantics in all cases (it is the definition of %). Only Simplify does
  // this: as a construction rule it would depend on which partial sums were
  // formed (a sum may hold the pair or not), and equal polynomials over the
  // atoms would stop being the same node.
  void Recombine(Poly& p) {
    bool changed = true;
    while (changed && HasDivAndMod(p)) {
      changed = false;
      for (size_t i = 0; i < p.terms.size() && !changed; ++i) {
        const Term mod = p.terms[i];
        if (mod.mono->kind() != ExprKind::kMod) continue;
        const Expr dividend = mod.mono->operands()[0];
        const Expr div = FloorDiv(dividend, mod.mono->value());
        auto it = std::lower_bound(p.terms.begin(), p.terms.end(), div,
                                   [](const Term& t, Expr e) { return Before(t.mono, e); });
        if (it == p.terms.end() || it->mono != div || it->coeff != mod.coeff * mod.mono->value()) {
          continue;
        }
        p.terms.erase(it);
        p.terms.erase(std::find_if(p.terms.begin(), p.terms.end(),
                                   [&](const Term& t) { return t.mono == mod.mono; }));
        p = Combine(p, ToPoly(dividend), mod.coeff);
        changed = true;
      }
    }
  }

  static bool HasDivAndMod(const Poly& p) {
    bool div = false, mod = false;
    for (const Term& t : p.terms) {
      div |= t.mono->kind() == ExprKind::kFloorDiv;
      mod |= t.mono->kind() == ExprKind::kMod;
    }
    return div && mod;
  }

  // --- FloorDiv and Mod.

  // dividend == d*quotient + scale*rest + offset, where `rest` is reduced
  // for `divisor` (see the top of this file), d == scale*divisor and
  // 0 <= offset < scale. Then, for floor semantics whatever the signs,
  //   dividend // d == quotient + rest // divisor
  //   dividend %  d == scale*(rest % divisor) + offset
  // since d*quotient is an exact multiple of d, and
  // (scale*r + offset) // scale == r.
  struct DivParts {
    Poly quotient;
    Poly rest;
    int64_t divisor;
    int64_t scale;
    int64_t offset;
  };

  static DivParts SplitByDivisor(const Poly& p, int64_t d) {
    DivParts parts;
    for (const Term& t : p.terms) {
      const int64_t q = FloorDivInt(t.coeff, d);
      const int64_t r = t.coeff - q * d;
      if (q != 0) parts.quotient.terms.push_back({t.mono, q, nullptr});
      if (r != 0) {
        parts.rest.terms.push_back({t.mono, r, q == 0 ? t.node : nullptr});
      }
    }
    parts.quotient.constant = FloorDivInt(p.constant, d);
    const int64_t constant = FloorModInt(p.constant, d);
    int64_t g = d;
    for (const Term& t : parts.rest.terms) g = std::gcd(g, t.coeff);
    if (g > 1) {
      for (Term& t : parts.rest.terms) {
        t.coeff /= g;
        t.node = nullptr;
      }
    }
    parts.rest.constant = constant / g;
    parts.offset = constant % g;
    parts.divisor = d / g;
    parts.scale = g;
    return parts;
  }

  // dividend // d or dividend % d; `ranges` adds the range-based rules.
  Expr DivMod(const Poly& dividend, int64_t d, bool is_mod, RangeSimplifier* ranges);

  // rest // d or rest % d for a reduced `rest`.
  Expr DivModReduced(const Poly& rest, int64_t d, bool is_mod, RangeSimplifier* ranges);

  // As b*(e % c) == b*e - b*c*(e // c), a dividend's terms
  //   b*(e % c) + m*(e // c)  equal  b*e + (m - b*c)*(e // c),
  // and when d divides m - b*c the last part is an exact multiple of d. So
  // (e % a) % d == e % d when d divides a, and
  // (2*(f // 6) + f % 6) // 4 == f // 4 - f // 6 (a reshape's round trip,
  // once Simplify has rewritten the atoms). Returns rest // d or rest % d,
  // or nullptr if no Mod term qualifies.
  Expr ExpandMod(const Poly& rest, int64_t d, bool is_mod, RangeSimplifier* ranges) {
    bool has_div = false;
    for (const Term& t : rest.terms) {
      has_div |= t.mono->kind() == ExprKind::kFloorDiv;
    }
    for (const Term& t : rest.terms) {
      if (t.mono->kind() != ExprKind::kMod) continue;
      const int64_t b = t.coeff;
      const int64_t c = t.mono->value();
      // Without a partner m*(e // c), only Mod gains: a FloorDiv would trade
      // its Mod atom for a FloorDiv term and lose (e // a) // b == e // (a*b).
      if (!has_div && (!is_mod || (b * c) % d != 0)) continue;
      const Expr e = t.mono->operands()[0];
      const Expr div = FloorDiv(e, c);
      const auto it = std::lower_bound(rest.terms.begin(), rest.terms.end(), div,
                                       [](const Term& u, Expr x) { return Before(u.mono, x); });
      const bool found = it != rest.terms.end() && it->mono == div;
      const int64_t m = found ? it->coeff : 0;
      if ((!is_mod && m == 0) || (m - b * c) % d != 0) continue;
      Poly others;
      others.constant = rest.constant;
      for (const Term& u : rest.terms) {
        if (u.mono != t.mono && u.mono != div) others.terms.push_back(u);
      }
      Poly expanded = Combine(others, ToPoly(e), b);
      if (m != b * c) expanded = Combine(expanded, ToPoly(div), m - b * c);
      return DivMod(expanded, d, is_mod, ranges);
    }
    return nullptr;
  }

  // --- The public operations.

  Expr Add(Expr a, Expr b) { return AddScaled(a, b, 1); }

  Expr AddScaled(Expr a, Expr b, int64_t scale) {
    if (a->is_const() && b->is_const()) {
      return Const(a->value() + scale * b->value());
    }
    if (b->is_const(0)) return a;
    if (a->is_const(0) && scale == 1) return b;
    return FromPoly(Combine(ToPoly(a), ToPoly(b), scale));
  }

  Expr Mul(Expr a, Expr b) {
    if (a->is_const() && b->is_const()) return Const(a->value() * b->value());
    if (a->is_const()) std::swap(a, b);
    if (b->is_const()) {
      if (b->value() == 0) return b;
      if (b->value() == 1) return a;
      return FromPoly(Scale(ToPoly(a), b->value()));
    }
    return FromPoly(Multiply(ToPoly(a), ToPoly(b)));
  }

  Expr FloorDiv(Expr a, int64_t d) { return DivModChecked(a, d, false); }
  Expr Mod(Expr a, int64_t d) { return DivModChecked(a, d, true); }

  Expr DivModChecked(Expr a, int64_t d, bool is_mod) {
    if (d <= 0) {
      Die(absl::StrCat(is_mod ? "Mod" : "FloorDiv", " by non-positive ", d));
    }
    if (a->is_const()) {
      return Const(is_mod ? FloorModInt(a->value(), d) : FloorDivInt(a->value(), d));
    }
    return DivMod(ToPoly(a), d, is_mod, nullptr);
  }

  Expr Substitute(Expr e, absl::Span<const Expr> replacements, ExprMap<Expr>& memo) {
    if (e->kind() == ExprKind::kConst) return e;
    if (e->kind() == ExprKind::kVar) {
      return e->value() < static_cast<int64_t>(replacements.size()) ? replacements[e->value()] : e;
    }
    if (const Expr* known = memo.Find(e)) return *known;
    Expr result;
    if (e->kind() == ExprKind::kAdd) {
      result = SubstituteSum(e, replacements, memo);
    } else {
      absl::InlinedVector<Expr, 8> operands;
      for (Expr operand : e->operands()) {
        operands.push_back(Substitute(operand, replacements, memo));
      }
      result = Rebuild(e, operands);
    }
    memo.Insert(e, result);
    return result;
  }

  // Substitute for a sum: the sum of coefficient * substituted monomial
  // over its terms, gathered as one polynomial, so that no scaled term
  // becomes a node of its own on the way (Rebuild would make each).
  Expr SubstituteSum(Expr sum, absl::Span<const Expr> replacements, ExprMap<Expr>& memo) {
    Poly result;
    for (Expr operand : sum->operands()) {
      if (operand->is_const()) {
        result.constant += operand->value();
        continue;
      }
      const Term term = SplitTerm(operand);
      const Expr mono = Substitute(term.mono, replacements, memo);
      if (mono == term.mono) {  // the term stays as it is
        result.terms.push_back(term);
        continue;
      }
      const Poly p = ToPoly(mono);
      result.constant += term.coeff * p.constant;
      for (const Term& t : p.terms) {
        result.terms.push_back({t.mono, term.coeff * t.coeff, term.coeff == 1 ? t.node : nullptr});
      }
    }
    Normalize(result);
    return FromPoly(std::move(result));
  }

  // `e` with its operands replaced, through the canonicalising constructors.
  Expr Rebuild(Expr e, absl::Span<const Expr> operands) {
    switch (e->kind()) {
      case ExprKind::kAdd:
        return Sum(operands);
      case ExprKind::kMul: {
        Expr product = operands[0];
        for (size_t i = 1; i < operands.size(); ++i) {
          product = Mul(product, operands[i]);
        }
        return product;
      }
      case ExprKind::kFloorDiv:
        return FloorDiv(operands[0], e->value());
      case ExprKind::kMod:
        return Mod(operands[0], e->value());
      case ExprKind::kConst:
      case ExprKind::kVar:
        break;
    }
    return e;
  }
};

// ===========================================================================
// Range-based simplification.
// ===========================================================================

// One Simplify call: bounds every subexpression from the variables' ranges
// and applies the rules that need them (see TryDivMod), memoising both.
class ExprContext::Impl::RangeSimplifier {
 public:
  RangeSimplifier(Impl& impl, absl::Span<const int64_t> extents)
      : impl_(impl),
        was_simplifying_(impl.simplifying),
        done_(ExprMap<Expr>::Take(impl.spare_simplified)),
        bounds_(extents, ExprMap<Interval>::Take(impl.spare_bounds)) {
    impl_.simplifying = true;
  }
  ~RangeSimplifier() {
    impl_.simplifying = was_simplifying_;
    done_.Clear();
    impl_.spare_simplified = std::move(done_);
    impl_.spare_bounds = bounds_.TakeMemo();
  }

  Expr Run(Expr e) {
    if (e->kind() == ExprKind::kConst) return e;
    if (const Expr* known = done_.Find(e)) return *known;
    Expr result;
    if (e->kind() == ExprKind::kFloorDiv || e->kind() == ExprKind::kMod) {
      result = impl_.DivMod(impl_.ToPoly(Run(e->operands()[0])), e->value(),
                            e->kind() == ExprKind::kMod, this);
    } else {
      absl::InlinedVector<Expr, 8> operands;
      for (Expr operand : e->operands()) operands.push_back(Run(operand));
      result = impl_.Rebuild(e, operands);
    }
    // A subexpression with a single possible value is that constant.
    const Interval bound = bounds_.Of(result);
    if (bound.lo == bound.hi) result = impl_.Const(bound.lo);
    done_.Insert(e, result);
    return result;
  }

  // rest // d or rest % d for a reduced `rest` whose atoms are simplified, or
  // nullptr when no range rule applies.
  Expr TryDivMod(const Poly& rest, int64_t d, bool is_mod) {
    if (Expr e = TryWindow(rest, d, is_mod, /*narrowest=*/false)) return e;
    if (Expr e = TryWindow(rest, d, is_mod, /*narrowest=*/true)) return e;
    return TrySplitByFactor(rest, d, is_mod);
  }

 private:
  Interval BoundOf(const Poly& p) {
    Interval sum{p.constant, p.constant};
    for (const Term& t : p.terms) {
      sum = AddIntervals(sum, ScaleInterval(bounds_.Of(t.mono), t.coeff));
    }
    return sum;
  }

  // Replaces each coefficient c by c' == c (mod d): its residue in [1, d),
  // or (when `narrowest`) whichever of residue and residue - d is smaller
  // in magnitude, which catches sums like 7 - x0. If the rewritten sum lies
  // within one multiple of d, q*d <= sum' < (q+1)*d, then
  //   rest // d == sum((c - c')/d * m) + q   and   rest % d == sum' - q*d.
  Expr TryWindow(const Poly& rest, int64_t d, bool is_mod, bool narrowest) {
    Poly shifted = rest;
    Poly quotient;
    Interval sum{rest.constant, rest.constant};
    for (Term& t : shifted.terms) {
      const Interval bound = bounds_.Of(t.mono);
      if (!Bounded(bound)) return nullptr;
      int64_t c = FloorModInt(t.coeff, d);
      if (narrowest && d - c < c) c -= d;
      if (c != t.coeff) {
        quotient.terms.push_back({t.mono, (t.coeff - c) / d, nullptr});
        t.coeff = c;
        t.node = nullptr;
      }
      sum = AddIntervals(sum, ScaleInterval(bound, c));
    }
    const int64_t q = FloorDivInt(sum.lo, d);
    if (q != FloorDivInt(sum.hi, d)) return nullptr;
    if (is_mod) {
      shifted.constant -= q * d;
      return impl_.FromPoly(std::move(shifted));
    }
    quotient.constant = q;
    return impl_.FromPoly(std::move(quotient));
  }

  // Looks for g dividing d with rest == g*a + b and 0 <= b < g. Then
  //   rest // d == a // (d/g)   and   rest % d == g*(a % (d/g)) + b,
  // e.g. (1024*x1 + 32*x2 + x3) // 8192 -> x1 // 8 when 32*x2 + x3 < 1024.
  Expr TrySplitByFactor(const Poly& rest, int64_t d, bool is_mod) {
    absl::InlinedVector<int64_t, 4> factors;
    for (const Term& t : rest.terms) {
      const int64_t g = std::gcd(t.coeff, d);
      if (g > 1) factors.push_back(g);
    }
    std::sort(factors.begin(), factors.end(), std::greater<int64_t>());
    factors.erase(std::unique(factors.begin(), factors.end()), factors.end());
    for (int64_t g : factors) {
      Poly a, b;
      for (const Term& t : rest.terms) {
        if (t.coeff % g == 0) {
          a.terms.push_back({t.mono, t.coeff / g, nullptr});
        } else {
          b.terms.push_back(t);
        }
      }
      a.constant = FloorDivInt(rest.constant, g);
      b.constant = FloorModInt(rest.constant, g);
      const Interval bound = BoundOf(b);
      if (bound.lo < 0 || bound.hi >= g) continue;
      const Expr inner = impl_.DivMod(a, d / g, is_mod, this);
      if (!is_mod) return inner;
      return impl_.Add(impl_.Mul(inner, impl_.Const(g)), impl_.FromPoly(std::move(b)));
    }
    return nullptr;
  }

  Impl& impl_;
  const bool was_simplifying_;
  ExprMap<Expr> done_;
  ExprBounds bounds_;
};

Expr ExprContext::Impl::DivMod(const Poly& dividend, int64_t d, bool is_mod,
                               RangeSimplifier* ranges) {
  if (d == 1) return is_mod ? Const(0) : FromPoly(dividend);
  DivParts parts = SplitByDivisor(dividend, d);
  const Expr rest = DivModReduced(parts.rest, parts.divisor, is_mod, ranges);
  if (is_mod) {
    return Add(Mul(rest, Const(parts.scale)), Const(parts.offset));
  }
  return Add(FromPoly(std::move(parts.quotient)), rest);
}

Expr ExprContext::Impl::DivModReduced(const Poly& rest, int64_t d, bool is_mod,
                                      RangeSimplifier* ranges) {
  if (rest.terms.empty() || d == 1) {
    const int64_t k = rest.terms.empty() ? rest.constant : 0;
    return Const(is_mod ? FloorModInt(k, d) : FloorDivInt(k, d));
  }
  if (Expr e = ExpandMod(rest, d, is_mod, ranges)) return e;
  // (e // a + t) // d == ((e + a*t) // a) // d == (e + a*t) // (a*d), as t
  // is an integer.
  for (size_t i = 0; !is_mod && i < rest.terms.size(); ++i) {
    const Term& t = rest.terms[i];
    if (t.mono->kind() != ExprKind::kFloorDiv || t.coeff != 1) continue;
    Poly others = rest;
    others.terms.erase(others.terms.begin() + i);
    const int64_t a = t.mono->value();
    return DivMod(Combine(ToPoly(t.mono->operands()[0]), others, a), a * d, false, ranges);
  }
  if (ranges != nullptr) {
    if (Expr simplified = ranges->TryDivMod(rest, d, is_mod)) return simplified;
  }
  const Expr dividend = FromPoly(rest);
  return Intern(is_mod ? ExprKind::kMod : ExprKind::kFloorDiv, d,
                absl::MakeConstSpan(&dividend, 1));
}

// ===========================================================================
// The public API, printing and evaluation.
// ===========================================================================

ExprContext::ExprContext() : impl_(new Impl) {}
ExprContext::~ExprContext() { delete impl_; }

Expr ExprContext::Const(int64_t v) { return impl_->Const(v); }
Expr ExprContext::Var(int index) { return impl_->Var(index); }
Expr ExprContext::Add(Expr a, Expr b) { return impl_->Add(a, b); }
Expr ExprContext::Sub(Expr a, Expr b) { return impl_->AddScaled(a, b, -1); }
Expr ExprContext::Mul(Expr a, Expr b) { return impl_->Mul(a, b); }
Expr ExprContext::FloorDiv(Expr a, int64_t divisor) { return impl_->FloorDiv(a, divisor); }
Expr ExprContext::Mod(Expr a, int64_t divisor) { return impl_->Mod(a, divisor); }

namespace {

// Whether Simplify(e, extents) is `e` itself without a doubt: `e` has no
// FloorDiv or Mod (the only nodes the range rules rewrite) and none of its
// variables has a single possible value (each takes at least two, so no
// subexpression has a single possible value either). Most index
// expressions are such affine sums, and this check costs no allocation.
bool IsRangeFree(Expr e, absl::Span<const int64_t> extents) {
  switch (e->kind()) {
    case ExprKind::kConst:
      return true;
    case ExprKind::kVar:
      return e->value() >= static_cast<int64_t>(extents.size()) || extents[e->value()] >= 2;
    case ExprKind::kAdd:
    case ExprKind::kMul:
      for (Expr operand : e->operands()) {
        if (!IsRangeFree(operand, extents)) return false;
      }
      return true;
    case ExprKind::kFloorDiv:
    case ExprKind::kMod:
      return false;
  }
  return false;
}

}  // namespace

Expr ExprContext::Simplify(Expr e, absl::Span<const int64_t> var_extents) {
  if (IsRangeFree(e, var_extents)) return e;
  return Impl::RangeSimplifier(*impl_, var_extents).Run(e);
}

Expr ExprContext::Substitute(Expr e, absl::Span<const Expr> replacements) {
  ExprMap<Expr> memo = ExprMap<Expr>::Take(impl_->spare_substitutions);
  const Expr result = impl_->Substitute(e, replacements, memo);
  memo.Clear();
  impl_->spare_substitutions = std::move(memo);
  return result;
}

size_t ExprContext::size() const { return impl_->num_nodes; }

}  // namespace loom
