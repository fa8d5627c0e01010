"""Sizes as expressions of the symbolic sizes of a graph dynamo traced with
dynamic shapes (s0, s1, ...), for a translation that holds for every size
rather than for one call's: loom.torch compiles such a translation once, as
a loom graph whose inputs' dims are named by the symbols and whose
attributes are computed from them, and each new set of sizes binds it.

A SymSize is a size's value at the call being translated together with its
expression. Arithmetic keeps the expression; a comparison, a branch on a
size or a conversion to a plain int answers for the value at hand and
records the condition with its outcome (Guards), as dynamo's own guards
do: the translation holds exactly where every condition comes out the
same. A size that escapes into a plain int (an array's length, a constant's
values) is so pinned to its value, never silently wrong at another size."""

import operator

import sympy
from torch.utils._sympy.functions import FloorDiv, PythonMod

__all__ = ["Guards", "SymSize", "dim_expr", "is_size"]


class Guards:
    """The conditions on the symbolic sizes under which a translation holds."""

    def __init__(self):
        self.conditions = {}  # a sympy relation -> its outcome at the translation's sizes

    def record(self, condition, outcome):
        if condition not in (sympy.true, sympy.false):
            self.conditions[condition] = outcome

    def hold(self, values):
        """Whether every condition comes out the same at these sizes
        ({symbol: int}); one they do not decide does not hold."""
        for condition, outcome in self.conditions.items():
            decided = condition.xreplace(values)
            if decided not in (sympy.true, sympy.false) or bool(decided) != outcome:
                return False
        return True


def is_size(value):
    """Whether `value` is a size: a plain int or a SymSize."""
    return isinstance(value, (int, SymSize)) and not isinstance(value, bool)


def _value(v):
    return v.value if isinstance(v, SymSize) else v


def _expr(v):
    return v.expr if isinstance(v, SymSize) else sympy.Integer(v)


def _arithmetic(plain, symbolic, reflected=False):
    """A SymSize's operator: `plain` on the values, `symbolic` on the
    expressions (the operands swapped where `reflected`)."""
    def operate(self, other):
        if not is_size(other):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        return SymSize.make(plain(_value(a), _value(b)), symbolic(_expr(a), _expr(b)),
                            self.guards)
    return operate


def _comparison(plain, relation):
    """A SymSize's comparison: `plain` on the values, whose outcome the
    guards record for `relation` of the expressions."""
    def compare(self, other):
        if not is_size(other):
            return NotImplemented
        outcome = plain(self.value, _value(other))
        self.guards.record(relation(self.expr, _expr(other)), outcome)
        return outcome
    return compare


class SymSize:
    """A size of the call being translated (`value`) and its expression in
    the graph's symbols (`expr`); comparisons record their conditions in
    `guards`."""

    __slots__ = ("value", "expr", "guards")

    def __init__(self, value, expr, guards):
        self.value, self.expr, self.guards = int(value), expr, guards

    @staticmethod
    def make(value, expr, guards):
        """A SymSize, or the plain int where the expression is a number."""
        return int(value) if expr.is_number else SymSize(value, expr, guards)

    __add__ = _arithmetic(operator.add, operator.add)
    __radd__ = _arithmetic(operator.add, operator.add, reflected=True)
    __sub__ = _arithmetic(operator.sub, operator.sub)
    __rsub__ = _arithmetic(operator.sub, operator.sub, reflected=True)
    __mul__ = _arithmetic(operator.mul, operator.mul)
    __rmul__ = _arithmetic(operator.mul, operator.mul, reflected=True)
    __floordiv__ = _arithmetic(operator.floordiv, FloorDiv)
    __rfloordiv__ = _arithmetic(operator.floordiv, FloorDiv, reflected=True)
    __mod__ = _arithmetic(operator.mod, PythonMod)
    __rmod__ = _arithmetic(operator.mod, PythonMod, reflected=True)

    def __neg__(self):
        return SymSize.make(-self.value, -self.expr, self.guards)

    def __pos__(self):
        return self

    def __abs__(self):
        return self if self >= 0 else -self

    __eq__ = _comparison(operator.eq, sympy.Eq)
    __ne__ = _comparison(operator.ne, sympy.Ne)
    __lt__ = _comparison(operator.lt, sympy.Lt)
    __le__ = _comparison(operator.le, sympy.Le)
    __gt__ = _comparison(operator.gt, sympy.Gt)
    __ge__ = _comparison(operator.ge, sympy.Ge)

    def __bool__(self):
        return self != 0

    def __hash__(self):
        return hash(self.value)

    def __index__(self):
        """The plain value, pinned: the translation then holds at this value only."""
        self.guards.record(sympy.Eq(self.expr, self.value), True)
        return self.value

    __int__ = __index__

    def __float__(self):
        return float(self.__index__())

    def __str__(self):  # text of the value (a graph's, a message's): pinned too
        return str(self.__index__())

    def __format__(self, spec):
        return format(self.__index__(), spec)

    def __pow__(self, other):
        if is_size(other) and not isinstance(other, SymSize) and other >= 0:
            return SymSize.make(self.value ** other, self.expr ** other, self.guards)
        return float(self) ** other  # a float of the size (a scale): pinned

    def __rpow__(self, other):
        return other ** self.__index__()

    def __truediv__(self, other):
        return float(self) / other

    def __rtruediv__(self, other):
        return other / float(self)

    def __repr__(self):
        return "SymSize(%d = %s)" % (self.value, self.expr)


def dim_expr(size, names):
    """The text of a SymSize's expression for a loom graph's computed
    attribute (ir/named_dims.h's EvaluateDimExpr), or None where it reads a
    symbol outside `names` (those the graph's inputs' dims name) or takes a
    form the text lacks."""
    try:
        return _text(size.expr, names)
    except ValueError:
        return None


def _text(e, names):
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        if e.name not in names:
            raise ValueError(e.name)
        return e.name
    if isinstance(e, sympy.Add):
        return "(%s)" % " + ".join(_text(a, names) for a in e.args)
    if isinstance(e, sympy.Mul):
        return "(%s)" % "*".join(_text(a, names) for a in e.args)
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and 0 < e.exp <= 8:
        return "(%s)" % "*".join([_text(e.base, names)] * int(e.exp))
    if isinstance(e, FloorDiv):
        return "(%s // %s)" % tuple(_text(a, names) for a in e.args)
    if isinstance(e, (PythonMod, sympy.Mod)):
        return "(%s %% %s)" % tuple(_text(a, names) for a in e.args)
    if isinstance(e, (sympy.Max, sympy.Min)):
        return "%s(%s)" % ("max" if isinstance(e, sympy.Max) else "min",
                           ", ".join(_text(a, names) for a in e.args))
    raise ValueError(str(e))
