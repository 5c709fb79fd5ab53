"""The logical query language of ITLR: quoted terms combined with AND, OR, NOT and parentheses.

Grammar (precedence NOT > AND > OR; parentheses override)::

    query := or EOF
    or    := and ("OR" and)*
    and   := not ("AND" not)*
    not   := "NOT" not | atom
    atom  := TERM | "(" or ")"

A TERM is text between double quotes (typographic quotes “…” are accepted too); inside a term ``\\"``
is a quote and ``\\\\`` a backslash. Keywords are case-insensitive and printed in upper case.

Trees are immutable and n-ary: a chain ``"a" AND "b" AND "c"`` is one ``And`` with three children,
while ``"a" AND ("b" AND "c")`` keeps its explicit group as a nested ``And``. With that rule
``parse(to_string(tree)) == tree`` for every tree, and the printer writes only the parentheses the
structure needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


class QuerySyntaxError(ValueError):
    """A malformed query; ``position`` is the 0-based character offset of the problem."""

    def __init__(self, message: str, query: str, position: int) -> None:
        self.reason = message
        self.query = query
        self.position = position
        super().__init__(f"{message} at position {position}\n{query}\n{' ' * position}^")


@dataclass(frozen=True)
class Term:
    """An atomic term; its text is whitespace-normalised and never empty."""

    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError("a term's text must be a string")
        normalised = " ".join(self.text.split())
        if not normalised:
            raise ValueError("a term cannot be empty")
        object.__setattr__(self, "text", normalised)


@dataclass(frozen=True)
class Not:
    child: Node


@dataclass(frozen=True)
class And:
    children: tuple[Node, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "children", tuple(self.children))
        if len(self.children) < 2:
            raise ValueError("AND needs at least two operands")


@dataclass(frozen=True)
class Or:
    children: tuple[Node, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "children", tuple(self.children))
        if len(self.children) < 2:
            raise ValueError("OR needs at least two operands")


Node = Term | Not | And | Or


# -- tokenizer -----------------------------------------------------------------

_OPEN_QUOTES = {'"': '"', "“": "”", "„": "“"}
_KEYWORDS = ("AND", "OR", "NOT")


@dataclass(frozen=True)
class Token:
    kind: str  # TERM, AND, OR, NOT, LPAREN, RPAREN, EOF
    value: str
    position: int


def tokenize(query: str) -> list[Token]:
    """Split ``query`` into tokens; raises QuerySyntaxError at the first character that fits none."""
    tokens: list[Token] = []
    i, n = 0, len(query)
    while i < n:
        ch = query[i]
        if ch.isspace():
            i += 1
        elif ch == "(":
            tokens.append(Token("LPAREN", ch, i))
            i += 1
        elif ch == ")":
            tokens.append(Token("RPAREN", ch, i))
            i += 1
        elif ch in _OPEN_QUOTES:
            close = _OPEN_QUOTES[ch]
            start, i = i, i + 1
            chars: list[str] = []
            while True:
                if i >= n:
                    raise QuerySyntaxError("unterminated term (missing closing quote)", query, start)
                c = query[i]
                if c == "\\" and i + 1 < n and query[i + 1] in ('"', "\\", close):
                    chars.append(query[i + 1])
                    i += 2
                elif c == close or (c == '"' and ch != '"'):
                    i += 1
                    break
                else:
                    chars.append(c)
                    i += 1
            text = "".join(chars)
            if not text.strip():
                raise QuerySyntaxError("empty term", query, start)
            tokens.append(Token("TERM", text, start))
        elif ch.isalpha() or ch == "_":
            start = i
            while i < n and (query[i].isalnum() or query[i] in "_-'"):
                i += 1
            word = query[start:i]
            if word.upper() in _KEYWORDS:
                tokens.append(Token(word.upper(), word, start))
            else:
                raise QuerySyntaxError(
                    f"unquoted text {word!r} (terms must be in double quotes; operators are AND, OR, NOT)",
                    query,
                    start,
                )
        else:
            raise QuerySyntaxError(f"unexpected character {ch!r}", query, i)
    tokens.append(Token("EOF", "", n))
    return tokens


# -- parser --------------------------------------------------------------------


class _Parser:
    def __init__(self, query: str) -> None:
        self.query = query
        self.tokens = tokenize(query)
        self.pos = 0

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def take(self) -> Token:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def error(self, message: str, token: Token) -> QuerySyntaxError:
        return QuerySyntaxError(message, self.query, token.position)

    def parse(self) -> Node:
        if self.peek().kind == "EOF":
            raise self.error("empty query", self.peek())
        node = self.parse_or()
        tok = self.peek()
        if tok.kind == "RPAREN":
            raise self.error("unmatched ')'", tok)
        if tok.kind != "EOF":
            raise self.error(f"expected AND, OR or the end of the query, found {_describe(tok)}", tok)
        return node

    def parse_or(self) -> Node:
        children = [self.parse_and()]
        while self.peek().kind == "OR":
            self.take()
            children.append(self.parse_and())
        return children[0] if len(children) == 1 else Or(tuple(children))

    def parse_and(self) -> Node:
        children = [self.parse_not()]
        while self.peek().kind == "AND":
            self.take()
            children.append(self.parse_not())
        return children[0] if len(children) == 1 else And(tuple(children))

    def parse_not(self) -> Node:
        if self.peek().kind == "NOT":
            self.take()
            return Not(self.parse_not())
        return self.parse_atom()

    def parse_atom(self) -> Node:
        tok = self.peek()
        if tok.kind == "TERM":
            self.take()
            return Term(tok.value)
        if tok.kind == "LPAREN":
            self.take()
            if self.peek().kind == "RPAREN":
                raise self.error("empty parentheses", self.peek())
            node = self.parse_or()
            if self.peek().kind != "RPAREN":
                if self.peek().kind == "EOF":
                    raise self.error("'(' is never closed", tok)
                raise self.error(f"expected ')', AND or OR, found {_describe(self.peek())}", self.peek())
            self.take()
            return node
        raise self.error(f"expected a quoted term, '(' or NOT, found {_describe(tok)}", tok)


def _describe(tok: Token) -> str:
    if tok.kind == "EOF":
        return "the end of the query"
    if tok.kind == "TERM":
        return f"term {tok.value!r}"
    return repr(tok.value) if tok.kind in ("LPAREN", "RPAREN") else tok.kind


def parse(query: str) -> Node:
    """Parse a logical query; raises QuerySyntaxError with the position of the first problem."""
    return _Parser(query).parse()


# -- printer -------------------------------------------------------------------


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_string(node: Node) -> str:
    """Canonical text of a tree: upper-case operators, minimal parentheses, round-trips through parse."""
    if isinstance(node, Term):
        return _quote(node.text)
    if isinstance(node, Not):
        inner = to_string(node.child)
        return f"NOT ({inner})" if isinstance(node.child, (And, Or)) else f"NOT {inner}"
    if isinstance(node, And):
        # A nested AND (an explicit group) and any OR need parentheses under AND.
        parts = [f"({to_string(c)})" if isinstance(c, (And, Or)) else to_string(c) for c in node.children]
        return " AND ".join(parts)
    if isinstance(node, Or):
        parts = [f"({to_string(c)})" if isinstance(c, Or) else to_string(c) for c in node.children]
        return " OR ".join(parts)
    raise TypeError(f"not a query node: {node!r}")


# -- helpers -------------------------------------------------------------------


def walk(node: Node) -> Iterator[Node]:
    """Every node, pre-order."""
    yield node
    if isinstance(node, Not):
        yield from walk(node.child)
    elif isinstance(node, (And, Or)):
        for child in node.children:
            yield from walk(child)


def terms(node: Node) -> list[str]:
    """Distinct term texts in order of first appearance."""
    seen: dict[str, None] = {}
    for n in walk(node):
        if isinstance(n, Term):
            seen.setdefault(n.text, None)
    return list(seen)


def polarities(node: Node) -> dict[str, set[bool]]:
    """For each distinct term: True if it occurs under an even number of NOTs, False if odd (both possible)."""
    out: dict[str, set[bool]] = {}

    def visit(n: Node, positive: bool) -> None:
        if isinstance(n, Term):
            out.setdefault(n.text, set()).add(positive)
        elif isinstance(n, Not):
            visit(n.child, not positive)
        else:
            for c in n.children:
                visit(c, positive)

    visit(node, True)
    return out


def positive_terms(node: Node) -> list[str]:
    """Terms that occur at least once with positive polarity (the things a document should be about)."""
    pol = polarities(node)
    return [t for t in terms(node) if True in pol[t]]


def negative_terms(node: Node) -> list[str]:
    """Terms that occur only under an odd number of NOTs (the things to exclude)."""
    pol = polarities(node)
    return [t for t in terms(node) if pol[t] == {False}]


def positive_part(node: Node) -> Node | None:
    """The tree with every negated subtree dropped (None if nothing positive is left).

    ``"a" AND NOT "b"`` → ``"a"``; ``("a" OR "b") AND NOT "c"`` → ``"a" OR "b"``; an OR with a negated
    branch keeps only its positive branches."""
    if isinstance(node, Term):
        return node
    if isinstance(node, Not):
        return None
    kept = [p for p in (positive_part(c) for c in node.children) if p is not None]
    if not kept:
        return None
    if len(kept) == 1:
        return kept[0]
    return And(tuple(kept)) if isinstance(node, And) else Or(tuple(kept))


def count_negations(node: Node) -> int:
    return sum(isinstance(n, Not) for n in walk(node))
