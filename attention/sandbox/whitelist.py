"""The sandbox: a mask or score function a learner types, checked, compiled and run safely.

The learner writes a small function in FlexAttention's style (torch.nn.attention.flex_attention):

    def mask(b, h, q_idx, kv_idx):                 # True = may attend
        return q_idx >= kv_idx

    def score(score, b, h, q_idx, kv_idx):         # the new score (-inf masks)
        return score - slope[h] * abs(q_idx - kv_idx)

`compile_mask_function(source)` checks the text and compiles it; `run_mask_function` calls it on
a T x T grid with tensor arguments that broadcast, as FlexAttention's vmapped mask_mod and
score_mod see them cell by cell (b and h 0-d, q_idx a (T, 1) column of positions, kv_idx a
(1, T) row): so `q_idx >= kv_idx` works and `and`, `or`, `not` and `if` on them fail, with a
message saying to use &, |, ~ and torch.where. The explorer that shows the result is
attention/explore/mask_function.py.

Safety: in the classroom (Voila) students type into the teacher's kernel, so the text never runs
as Python as written. `compile_mask_function` parses it with `ast` and allows only a whitelist:
one `def` (or lambda) with the expected argument names, assignments, `if`, `return`,
arithmetic, comparison, bitwise and boolean operators, numbers, the arguments and locals,
subscripts of the given tables (`doc[q_idx]`, `slope[h]`), and calls of abs, min, max,
torch.where, torch.abs, torch.minimum, torch.maximum and torch.tanh. No other attribute, no
double-underscore name, no import, loop, comprehension, string, nested function or keyword
argument; at most MAX_SOURCE characters. Every number becomes a 0-d tensor before the code is
compiled, so no arithmetic runs on Python's unbounded integers (9**9**9 wraps in int64 at once
instead of running for ever), and with no loops and no calls of the learner's own code the run
time is bounded by the length. The code runs with empty __builtins__. Every refusal and every
failure is a MaskFunctionError naming what and where (line, column), never a traceback.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Literal

import torch
from torch import Tensor

from ..positional import alibi_slopes
from .limits import check_int

MAX_SOURCE = 2000  # characters: ample for a mask function, and a bound on the work it can do
N_HEADS = 8  # heads of the ALiBi slope table `slope`
DOC_LENGTHS = (5, 3, 4, 6)  # the documents packed into the sequence, repeated to fill T

MASK_ARGS = (("b",), ("h",), ("q_idx", "q"), ("kv_idx", "k"))
SCORE_ARGS = (("score",), *MASK_ARGS)

_CALLS = {"abs": 1, "min": 2, "max": 2}  # name -> number of arguments
_TORCH_CALLS = {"where": 3, "abs": 1, "minimum": 2, "maximum": 2, "tanh": 1}
_TORCH_VALUES = {"inf"}
_TABLES = {"doc": "the document id of each position", "slope": "ALiBi's slope of each head"}
_RESERVED = {"torch", "inf", *_CALLS, *_TABLES}
_BINOPS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}
_COMPARE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_UNARY = (ast.UAdd, ast.USub, ast.Invert, ast.Not)
_ALLOWED_CALLS_TEXT = (
    "abs, min, max, torch.where, torch.abs, torch.minimum, torch.maximum and torch.tanh"
)
FILENAME = "<your function>"
AND_OR_HINT = (
    "`and`, `or`, `not` and `if` need one True or False, but q_idx and kv_idx are index "
    "tensors: use & and | (and ~ for not) on index tensors, as FlexAttention does, with "
    "parentheses: (q_idx >= kv_idx) & (q_idx - kv_idx < 4); torch.where(cond, a, b) for if"
)


class MaskFunctionError(ValueError):
    """The learner's function was refused or failed; the message says what and where."""


Kind = Literal["mask", "score"]


@dataclass(frozen=True)
class CompiledFunction:
    """A learner's function that passed the whitelist, ready to call with tensors."""

    kind: Kind  # "mask": (b, h, q_idx, kv_idx) -> bool; "score": (score, b, h, ...) -> score
    name: str
    args: tuple[str, ...]
    fn: Any  # the Python function: give it to flex_attention as mask_mod / score_mod
    seq_len: int  # the length of its table `doc`


def _where(node: ast.AST) -> str:
    line = getattr(node, "lineno", None)
    return f" (line {line}, column {node.col_offset + 1})" if line is not None else ""


def _refuse(what: str, node: ast.AST | None = None) -> MaskFunctionError:
    return MaskFunctionError(f"not allowed: {what}{_where(node) if node is not None else ''}")


_NODE_WORDS = {
    ast.Import: "import",
    ast.ImportFrom: "import",
    ast.For: "a for loop (loops are not allowed)",
    ast.While: "a while loop (loops are not allowed)",
    ast.AsyncFor: "a loop",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.List: "a list",
    ast.Tuple: "a tuple",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.JoinedStr: "an f-string",
    ast.Lambda: "a nested lambda",
    ast.FunctionDef: "a nested function",
    ast.AsyncFunctionDef: "a nested function",
    ast.ClassDef: "a class",
    ast.With: "with",
    ast.Try: "try",
    ast.Raise: "raise",
    ast.Global: "global",
    ast.Nonlocal: "nonlocal",
    ast.Delete: "del",
    ast.NamedExpr: "the := operator",
    ast.Starred: "*arguments",
    ast.Slice: "a slice (:)",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Assert: "assert",
    ast.AnnAssign: "an annotated assignment",
}


def _describe(node: ast.AST) -> str:
    return _NODE_WORDS.get(type(node), type(node).__name__)


class _Checker:
    """Walks the learner's function and raises on the first node outside the whitelist."""

    def __init__(self, args: tuple[str, ...], local_names: set[str]) -> None:
        self.args = set(args)
        self.names = self.args | local_names | {"inf"}

    def stmts(self, body: list[ast.stmt]) -> None:
        for i, s in enumerate(body):
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and i == 0:
                if isinstance(s.value.value, str):
                    continue  # a docstring
            self.stmt(s)

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Return):
            if s.value is not None:
                self.expr(s.value)
        elif isinstance(s, ast.Assign):
            if len(s.targets) != 1 or not isinstance(s.targets[0], ast.Name):
                raise _refuse("assigning to anything but one plain name (x = ...)", s)
            self.target(s.targets[0])
            self.expr(s.value)
        elif isinstance(s, ast.AugAssign):
            if not isinstance(s.target, ast.Name):
                raise _refuse("assigning to anything but a plain name", s)
            self.target(s.target)
            self.binop(s.op, s)
            self.expr(s.value)
        elif isinstance(s, ast.If):
            self.expr(s.test)
            self.stmts(s.body)
            self.stmts(s.orelse)
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, ast.Expr):
            raise _refuse("an expression on its own line (assign it or return it)", s)
        else:
            raise _refuse(_describe(s), s)

    def target(self, name: ast.Name) -> None:
        self.name_ok(name)
        if name.id in _RESERVED:
            raise _refuse(f"assigning to {name.id}, a name the function reads", name)

    def name_ok(self, node: ast.Name) -> None:
        if "__" in node.id:
            raise _refuse(f"the name {node.id} (no double-underscore names)", node)

    def binop(self, op: ast.operator, node: ast.AST) -> None:
        if type(op) not in _BINOPS:
            word = {ast.LShift: "<<", ast.RShift: ">>", ast.MatMult: "@"}.get(type(op), "it")
            raise _refuse(f"the operator {word}", node)

    def expr(self, e: ast.expr) -> None:
        if isinstance(e, ast.BinOp):
            self.binop(e.op, e)
            self.expr(e.left)
            self.expr(e.right)
        elif isinstance(e, ast.UnaryOp):
            if not isinstance(e.op, _UNARY):
                raise _refuse("that unary operator", e)
            self.expr(e.operand)
        elif isinstance(e, ast.BoolOp):  # runs, and fails on index tensors with AND_OR_HINT
            for v in e.values:
                self.expr(v)
        elif isinstance(e, ast.Compare):
            for op in e.ops:
                if not isinstance(op, _COMPARE):
                    word = "is" if isinstance(op, (ast.Is, ast.IsNot)) else "in"
                    raise _refuse(f"the comparison `{word}` (use ==, !=, <, <=, >, >=)", e)
            self.expr(e.left)
            for c in e.comparators:
                self.expr(c)
        elif isinstance(e, ast.IfExp):
            self.expr(e.test)
            self.expr(e.body)
            self.expr(e.orelse)
        elif isinstance(e, ast.Constant):
            v = e.value
            if isinstance(v, str | bytes):
                raise _refuse("a string", e)
            if not isinstance(v, bool | int | float):
                raise _refuse(f"the constant {v!r:.20} (numbers, True and False only)", e)
        elif isinstance(e, ast.Name):
            self.name_ok(e)
            if e.id in _TABLES:
                raise _refuse(
                    f"{e.id} on its own: it is a table ({_TABLES[e.id]}); index it, e.g. "
                    f"{e.id}[{'q_idx' if e.id == 'doc' else 'h'}]",
                    e,
                )
            if e.id in _CALLS:
                raise _refuse(f"{e.id} without calling it", e)
            if e.id == "torch":
                raise _refuse("torch on its own (torch.where(...), torch.inf, ...)", e)
            if e.id not in self.names:
                raise _refuse(
                    f"the name {e.id}: a function may read its arguments "
                    f"({', '.join(sorted(self.args))}), names it assigned, doc, slope and inf",
                    e,
                )
        elif isinstance(e, ast.Subscript):
            if not (isinstance(e.value, ast.Name) and e.value.id in _TABLES):
                raise _refuse("indexing anything but the tables doc[...] and slope[...]", e)
            if isinstance(e.slice, ast.Slice | ast.Tuple):
                raise _refuse("a slice or several indices: one position, e.g. doc[q_idx]", e)
            self.expr(e.slice)
        elif isinstance(e, ast.Call):
            self.call(e)
        elif isinstance(e, ast.Attribute):
            if not (isinstance(e.value, ast.Name) and e.value.id == "torch"):
                raise _refuse(
                    f"the attribute .{e.attr}: the only attributes are torch.inf and the calls "
                    f"{_ALLOWED_CALLS_TEXT}",
                    e,
                )
            if e.attr not in _TORCH_VALUES:
                what = "without calling it" if e.attr in _TORCH_CALLS else "(not on the list)"
                raise _refuse(f"torch.{e.attr} {what}; allowed: {_ALLOWED_CALLS_TEXT}", e)
        else:
            raise _refuse(_describe(e), e)

    def call(self, e: ast.Call) -> None:
        f = e.func
        if isinstance(f, ast.Name):
            self.name_ok(f)
        if isinstance(f, ast.Name) and f.id in _CALLS:
            name, n = f.id, _CALLS[f.id]
        elif (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id == "torch"
            and f.attr in _TORCH_CALLS
        ):
            name, n = f"torch.{f.attr}", _TORCH_CALLS[f.attr]
        else:
            shown = ast.unparse(f)[:40]
            raise _refuse(f"calling {shown}; the calls allowed are {_ALLOWED_CALLS_TEXT}", e)
        if e.keywords:
            raise _refuse(f"keyword arguments to {name}", e)
        if len(e.args) != n:
            raise MaskFunctionError(
                f"{name} takes {n} argument{'s' if n > 1 else ''}, got {len(e.args)}{_where(e)}"
            )
        for a in e.args:
            self.expr(a)


def _arg_names(a: ast.arguments, node: ast.AST) -> tuple[str, ...]:
    if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.kw_defaults:
        raise _refuse("*args, **kwargs, keyword-only arguments or defaults", node)
    args = [*a.posonlyargs, *a.args]
    if any(x.annotation is not None for x in args):
        raise _refuse("annotations on the arguments", node)
    return tuple(x.arg for x in args)


def _kind(args: tuple[str, ...], node: ast.AST) -> Kind:
    for kind, expected in (("mask", MASK_ARGS), ("score", SCORE_ARGS)):
        if len(args) == len(expected) and all(
            a in ok for a, ok in zip(args, expected, strict=True)
        ):
            return kind  # type: ignore[return-value]
    raise MaskFunctionError(
        f"arguments: expected (b, h, q_idx, kv_idx) for a mask function or "
        f"(score, b, h, q_idx, kv_idx) for a score function (q and k also do for q_idx and "
        f"kv_idx), got ({', '.join(args)}){_where(node)}"
    )


def _assigned(body: list[ast.stmt]) -> set[str]:
    names = set()
    for s in body:
        for node in ast.walk(s):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


class _Numbers(ast.NodeTransformer):
    """Replace every number by a name bound to a 0-d tensor (no unbounded int arithmetic)."""

    def __init__(self) -> None:
        self.values: dict[str, Tensor] = {}

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str):
            return node  # the docstring
        name = f"_n{len(self.values)}"
        try:
            self.values[name] = torch.tensor(node.value)
        except (OverflowError, RuntimeError, ValueError):
            raise MaskFunctionError(
                f"the number {str(node.value)[:20]}... is too large for a 64-bit tensor"
                f"{_where(node)}"
            ) from None
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)


def _safe_torch() -> SimpleNamespace:
    return SimpleNamespace(
        where=torch.where,
        abs=torch.abs,
        minimum=lambda a, b: torch.minimum(torch.as_tensor(a), torch.as_tensor(b)),
        maximum=lambda a, b: torch.maximum(torch.as_tensor(a), torch.as_tensor(b)),
        tanh=torch.tanh,
        inf=math.inf,
    )


def _min(a: Any, b: Any) -> Tensor:
    return torch.minimum(torch.as_tensor(a), torch.as_tensor(b))


def _max(a: Any, b: Any) -> Tensor:
    return torch.maximum(torch.as_tensor(a), torch.as_tensor(b))


def document_ids(seq_len: int) -> Tensor:
    """The (T,) table `doc`: documents of lengths 5, 3, 4, 6, 5, 3, ... packed into T positions."""
    check_int("seq_len", seq_len, 1, 1 << 20)
    ids: list[int] = []
    while len(ids) < seq_len:
        d = len(ids) and ids[-1] + 1  # the next document's id
        ids += [d] * DOC_LENGTHS[d % len(DOC_LENGTHS)]
    return torch.tensor(ids[:seq_len])


def compile_mask_function(source: str, seq_len: int = 12) -> CompiledFunction:
    """Check the learner's source against the whitelist and compile it (see the module doc).

    seq_len sizes the table `doc` the function may read (`slope` has N_HEADS entries).

    Raises:
        MaskFunctionError: what is not allowed and where, or a syntax error.
    """
    if not isinstance(source, str):
        raise MaskFunctionError(
            f"source: expected the function's text, got {type(source).__name__}"
        )
    check_int("seq_len", seq_len, 1, 1 << 20)
    if len(source) > MAX_SOURCE:
        raise MaskFunctionError(
            f"source: {len(source):,} characters; a mask function needs at most {MAX_SOURCE:,}"
        )
    try:
        tree = ast.parse(source, filename=FILENAME, mode="exec")
    except SyntaxError as exc:
        where = f" (line {exc.lineno}, column {exc.offset})" if exc.lineno else ""
        raise MaskFunctionError(f"syntax error: {exc.msg}{where}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, deep nesting
        raise MaskFunctionError(f"cannot read the source: {exc}") from None
    body = tree.body
    if len(body) != 1:
        raise MaskFunctionError(
            "expected one function, def mask(b, h, q_idx, kv_idx): ... (or a lambda), got "
            f"{len(body)} statements" + (_where(body[1]) if len(body) > 1 else "")
        )
    (top,) = body
    if isinstance(top, ast.FunctionDef):
        if top.decorator_list or top.returns is not None:
            raise _refuse("decorators and return annotations", top)
        if "__" in top.name:
            raise _refuse(f"the name {top.name} (no double-underscore names)", top)
        args, name, inner = _arg_names(top.args, top), top.name, top.body
    elif isinstance(top, ast.Expr | ast.Assign) and isinstance(top.value, ast.Lambda):
        if isinstance(top, ast.Assign) and not (
            len(top.targets) == 1 and isinstance(top.targets[0], ast.Name)
        ):
            raise _refuse("assigning the lambda to anything but one name", top)
        lam = top.value
        args, name = _arg_names(lam.args, lam), "<lambda>"
        inner = [ast.Return(value=lam.body, lineno=lam.lineno, col_offset=lam.col_offset)]
    else:
        raise MaskFunctionError(
            "expected one function, def mask(b, h, q_idx, kv_idx): ... (or a lambda), got "
            f"{_describe(top)}{_where(top)}"
        )
    for node in ast.walk(top):  # double-underscore names first, wherever they are
        word = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(node, ast.arg):
            word = node.arg
        if isinstance(word, str) and "__" in word:
            raise _refuse(f"the name {word} (no double-underscore names)", node)
        if isinstance(node, ast.Name | ast.arg) and word.startswith("_"):  # the numbers' names
            raise _refuse(f"the name {word} (names may not start with _)", node)
    kind = _kind(args, top)
    try:
        _Checker(args, _assigned(inner)).stmts(inner)
        numbers = _Numbers()
        if name == "<lambda>":  # bind the lambda to a name this module reads back
            lam = top.value  # type: ignore[union-attr]
            top = ast.Assign(targets=[ast.Name(id="_fn", ctx=ast.Store())], value=lam)
            ast.copy_location(top, lam)
        module = ast.fix_missing_locations(numbers.visit(ast.Module(body=[top], type_ignores=[])))
        code = compile(module, FILENAME, "exec")
    except RecursionError:
        raise MaskFunctionError("the function is nested too deeply") from None
    namespace: dict[str, Any] = {
        "__builtins__": {},
        "torch": _safe_torch(),
        "abs": abs,
        "min": _min,
        "max": _max,
        "inf": math.inf,
        "doc": document_ids(seq_len),
        "slope": alibi_slopes(N_HEADS),
        **numbers.values,
    }
    exec(code, namespace)  # noqa: S102 - only whitelisted nodes reach here (see _Checker)
    fn = namespace["_fn" if name == "<lambda>" else name]
    return CompiledFunction(kind=kind, name=name, args=args, fn=fn, seq_len=seq_len)


# --- running it -----------------------------------------------------------------------------


def _line_of(exc: BaseException) -> str:
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f" (line {line})" if line is not None else ""


def _explain(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    where = _line_of(exc)
    if "Boolean value of Tensor" in text or "data-dependent control flow" in text:
        return f"{AND_OR_HINT}{where}"
    if isinstance(exc, IndexError) and "out of bounds" in text:
        return f"a table index is out of range{where}: {text}; doc has one entry per position"
    if isinstance(exc, IndexError) or "must be long" in text or "tensors used as indices" in text:
        return f"a table index must be whole numbers (positions), e.g. doc[q_idx]{where}: {text}"
    if isinstance(exc, NameError):
        return f"a name is read before it is assigned{where}: {text}"
    if "ZeroDivisionError" in text or isinstance(exc, ZeroDivisionError):
        return f"division by zero{where}"
    return f"your function raised {type(exc).__name__}{where}: {text}"


def _indices(seq_len: int, head: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    q_idx = torch.arange(seq_len)[:, None]  # (T, 1)
    kv_idx = torch.arange(seq_len)[None, :]  # (1, T)
    return torch.tensor(0), torch.tensor(head), q_idx, kv_idx


def run_mask_function(
    compiled: CompiledFunction, seq_len: int, head: int = 0, scores: Tensor | None = None
) -> Tensor:
    """Call the compiled function on the (T, T) grid; return the mask or the new scores.

    Raises:
        MaskFunctionError: it raised, or returned something other than bools (a mask) or
            finite-or-minus-infinity floats (a score) of a shape that broadcasts to (T, T).
    """
    b, h, q_idx, kv_idx = _indices(seq_len, head)
    if compiled.kind == "mask":
        args: tuple[Tensor, ...] = (b, h, q_idx, kv_idx)
    elif scores is None or tuple(scores.shape) != (seq_len, seq_len):
        raise ValueError(f"scores: a score function needs (T, T) = ({seq_len}, {seq_len}) scores")
    else:
        args = (scores.clone(), b, h, q_idx, kv_idx)
    try:
        out = compiled.fn(*args)
    except RecursionError:
        raise MaskFunctionError("your function is nested too deeply") from None
    except Exception as exc:  # noqa: BLE001 - explained to the learner, not raised as is
        raise MaskFunctionError(_explain(exc)) from None
    if out is None:
        raise MaskFunctionError("your function returned None; did you forget `return`?")
    if not isinstance(out, Tensor):
        raise MaskFunctionError(f"your function returned {type(out).__name__}, not a tensor")
    if compiled.kind == "mask":
        if out.dtype.is_floating_point:
            raise MaskFunctionError(
                f"a mask function returns bools (True = may attend), got floats ({out.dtype}): a "
                "float mask is a bias; write a score function, score(score, b, h, q_idx, kv_idx), "
                "to add one"
            )
        if out.dtype != torch.bool:
            raise MaskFunctionError(
                f"a mask function returns bools (True = may attend), got {out.dtype}: numbers "
                "are not True/False; compare instead, e.g. q_idx >= kv_idx"
            )
    elif not out.dtype.is_floating_point:
        raise MaskFunctionError(
            f"a score function returns the new score (floats), got {out.dtype}; to mask inside "
            "it, return torch.where(allowed, score, -inf)"
        )
    try:
        out = out.expand(seq_len, seq_len).clone()  # (T, T)
    except RuntimeError:
        raise MaskFunctionError(
            f"your function returned shape {tuple(out.shape)}, which does not broadcast to "
            f"(T, T) = ({seq_len}, {seq_len})"
        ) from None
    if compiled.kind == "score":
        bad = torch.isnan(out) | torch.isposinf(out)
        if bool(bad.any()):
            i, j = (int(x) for x in bad.nonzero()[0])
            what = "NaN" if bool(torch.isnan(out[i, j])) else "+inf"
            raise MaskFunctionError(
                f"your score function returned {what} at query {i}, key {j}; scores must be "
                "finite, or -inf to mask"
            )
    return out
