"""What a GBNF grammar forces a reply to say next.

llama.cpp's GBNF grammars (the local model's replies: ``lib.llm.prompts``) are read here into a
character automaton (Thompson, 1968: each literal, class, repetition and choice a small fragment of
states joined by empty moves). Fed the reply so far, it tells the text that must come next whatever
the model would pick, up to the first place where the grammar leaves a choice, and whether the reply
must then end. Such text is known before the model is asked: ``lib.llm.speculative`` proposes it as
the next tokens to check in one batch, and ends a reply without evaluating a tail the grammar fixes
(compare the "jump-forward" decoding of a compressed grammar automaton in SGLang, Zheng et al., 2024).

The subset read is the one llama.cpp documents for GBNF: rules ``name ::= ...`` (one or more lines),
``|`` choices, ``( )`` groups, ``"literals"`` and ``[classes]`` (``^`` negation, ranges) with the escapes
``\\n \\t \\r \\" \\\\ \\xHH \\uHHHH``, ``.``, the repetitions ``* + ? {m} {m,} {m,n}``, and ``#`` comments.
A rule that refers to itself is refused (:class:`GrammarError`): the automaton is built by inlining.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

ANY = (True, ())  # "." : every character (a negated empty class)


class GrammarError(ValueError):
    """A grammar outside the subset read here."""


@dataclass
class _State:
    eps: list[int] = field(default_factory=list)
    moves: list[tuple[tuple[bool, tuple[tuple[int, int], ...]], int]] = field(default_factory=list)


def _matches(pred: tuple[bool, tuple[tuple[int, int], ...]], ch: str) -> bool:
    negated, ranges = pred
    c = ord(ch)
    return any(lo <= c <= hi for lo, hi in ranges) != negated


def _single(pred: tuple[bool, tuple[tuple[int, int], ...]]) -> str | None:
    negated, ranges = pred
    if not negated and len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return chr(ranges[0][0])
    return None


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "[": "[", "]": "]", "-": "-", "^": "^"}


class _Parser:
    def __init__(self, text: str):
        self.rules = self._split(text)

    @staticmethod
    def _split(text: str) -> dict[str, str]:
        rules: dict[str, str] = {}
        name = None
        for raw in text.splitlines():
            line = _strip_comment(raw)
            m = re.match(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*::=(.*)$", line)
            if m:
                name = m.group(1)
                if name in rules:
                    raise GrammarError(f"rule {name!r} is defined twice")
                rules[name] = m.group(2)
            elif line.strip():
                if name is None:
                    raise GrammarError(f"text before the first rule: {line.strip()!r}")
                rules[name] += " " + line
        if "root" not in rules:
            raise GrammarError("no root rule")
        return rules


def _strip_comment(line: str) -> str:
    out, in_lit, in_cls, i = [], False, False, 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and (in_lit or in_cls):
            out.append(line[i:i + 2])
            i += 2
            continue
        if ch == '"' and not in_cls:
            in_lit = not in_lit
        elif ch == "[" and not in_lit:
            in_cls = True
        elif ch == "]" and in_cls:
            in_cls = False
        elif ch == "#" and not in_lit and not in_cls:
            break
        out.append(ch)
        i += 1
    return "".join(out)


class GrammarText:
    """The automaton of one GBNF grammar (build once, then :meth:`start` a reply)."""

    def __init__(self, grammar: str):
        self.rules = _Parser(grammar).rules
        self.states: list[_State] = []
        start, end = self._rule("root", ())
        self.start_state, self.accept = start, end

    # ---- building
    def _new(self) -> int:
        self.states.append(_State())
        return len(self.states) - 1

    def _rule(self, name: str, active: tuple[str, ...]) -> tuple[int, int]:
        if name not in self.rules:
            raise GrammarError(f"rule {name!r} is used but not defined")
        if name in active:
            raise GrammarError(f"rule {name!r} refers to itself")
        return self._alternatives(self.rules[name], 0, active + (name,), top=True)[0]

    def _alternatives(self, s: str, i: int, active, top=False) -> tuple[tuple[int, int], int]:
        start, end = self._new(), self._new()
        while True:
            (a, b), i = self._sequence(s, i, active)
            self.states[start].eps.append(a)
            self.states[b].eps.append(end)
            i = _skip_space(s, i)
            if i < len(s) and s[i] == "|":
                i += 1
                continue
            if top and i < len(s):
                raise GrammarError(f"unexpected {s[i:i + 10]!r}")
            return (start, end), i

    def _sequence(self, s: str, i: int, active) -> tuple[tuple[int, int], int]:
        start = cur = self._new()
        while True:
            i = _skip_space(s, i)
            if i >= len(s) or s[i] in "|)":
                return (start, cur), i
            frag, i = self._primary(s, i, active)
            frag, i = self._repeat(s, i, frag, active)
            self.states[cur].eps.append(frag[0])
            cur = frag[1]

    def _primary(self, s: str, i: int, active):
        ch = s[i]
        if ch == '"':
            chars, i = _literal(s, i + 1)
            start = cur = self._new()
            for c in chars:
                nxt = self._new()
                self.states[cur].moves.append(((False, ((ord(c), ord(c)),)), nxt))
                cur = nxt
            return (start, cur), i
        if ch == "[":
            pred, i = _char_class(s, i + 1)
            return self._one(pred), i
        if ch == ".":
            return self._one(ANY), i + 1
        if ch == "(":
            frag, i = self._alternatives(s, i + 1, active)
            if i >= len(s) or s[i] != ")":
                raise GrammarError("a group is not closed")
            return frag, i + 1
        m = re.match(r"[A-Za-z][A-Za-z0-9-]*", s[i:])
        if not m:
            raise GrammarError(f"unexpected {s[i:i + 10]!r}")
        return ("ref", m.group(0)), i + len(m.group(0))

    def _one(self, pred) -> tuple[int, int]:
        a, b = self._new(), self._new()
        self.states[a].moves.append((pred, b))
        return a, b

    def _build(self, frag, active) -> tuple[int, int]:
        """A fresh copy of an element (a rule reference is inlined each time it is used)."""
        if frag[0] == "ref":
            return self._rule(frag[1], active)
        return frag

    def _repeat(self, s: str, i: int, frag, active):
        """Apply a repetition suffix; every copy of the element is built anew (an NFA fragment is
        used once)."""
        i2 = _skip_space(s, i)
        suffix = None
        if i2 < len(s) and s[i2] in "*+?":
            (lo, hi), i, suffix = {"*": (0, None), "+": (1, None), "?": (0, 1)}[s[i2]], i2 + 1, True
        else:
            m = re.match(r"\{\s*(\d+)\s*(,\s*(\d*)\s*)?\}", s[i2:])
            if m:
                lo = int(m.group(1))
                hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
                i, suffix = i2 + len(m.group(0)), True
        if not suffix:
            return self._build(frag, active), i
        source = (frag, active)
        copies = [self._copy(source) for _ in range(lo)]
        start = cur = self._new()
        for a, b in copies:
            self.states[cur].eps.append(a)
            cur = b
        if hi is None:  # a loop: one more copy, as many times as wanted
            a, b = self._copy(source)
            self.states[cur].eps.append(a)
            self.states[b].eps.append(cur)
            return (start, cur), i
        end = self._new()
        self.states[cur].eps.append(end)
        for _ in range(hi - lo):
            a, b = self._copy(source)
            self.states[cur].eps.append(a)
            self.states[b].eps.append(end)
            cur = b
        return (start, end), i

    def _copy(self, source) -> tuple[int, int]:
        frag, active = source
        if frag[0] == "ref":
            return self._rule(frag[1], active)
        return self._clone(frag)

    def _clone(self, frag: tuple[int, int]) -> tuple[int, int]:
        """A copy of the states reachable from ``frag``'s start up to its end."""
        start, end = frag
        mapping: dict[int, int] = {}
        stack = [start]
        while stack:
            q = stack.pop()
            if q in mapping:
                continue
            mapping[q] = self._new()
            if q == end:
                continue
            st = self.states[q]
            stack.extend(st.eps)
            stack.extend(t for _, t in st.moves)
        for q, new in mapping.items():
            if q == end:
                continue
            st = self.states[q]
            self.states[new].eps = [mapping[t] for t in st.eps]
            self.states[new].moves = [(p, mapping[t]) for p, t in st.moves]
        return mapping[start], mapping[end]

    # ---- running
    def closure(self, states) -> frozenset[int]:
        seen, stack = set(states), list(states)
        while stack:
            for t in self.states[stack.pop()].eps:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    def start(self) -> "Reply":
        return Reply(self, self.closure([self.start_state]))

    def step(self, states: frozenset[int], ch: str) -> frozenset[int]:
        return self.closure([t for q in states for p, t in self.states[q].moves if _matches(p, ch)])

    def forced(self, states: frozenset[int]) -> tuple[str, bool, frozenset[int]]:
        """The text every reply must continue with from ``states``, whether the reply must end right
        after it, and the states after it."""
        text = []
        while True:
            moves = [(p, t) for q in states for p, t in self.states[q].moves]
            if not moves:
                return "".join(text), self.accept in states, states
            chars = {_single(p) for p, _ in moves}
            if self.accept in states or len(chars) != 1 or None in chars:
                return "".join(text), False, states
            ch = chars.pop()
            text.append(ch)
            states = self.closure([t for _, t in moves])


class Reply:
    """A reply being written under a grammar: feed it the text the model writes; ask what must follow."""

    def __init__(self, grammar: GrammarText, states: frozenset[int]):
        self.grammar, self.states = grammar, states

    def feed(self, text: str) -> bool:
        """Advance over ``text``; False (and no state) when the grammar does not allow it."""
        for ch in text:
            if not self.states:
                return False
            self.states = self.grammar.step(self.states, ch)
        return bool(self.states)

    def forced(self) -> tuple[str, bool]:
        """(text that must come next, whether the reply must end right after it); ("", False) once
        the reply has left the grammar."""
        if not self.states:
            return "", False
        text, ends, _ = self.grammar.forced(self.states)
        return text, ends


def _skip_space(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t\r\n":
        i += 1
    return i


def _escape(s: str, i: int) -> tuple[str, int]:
    """The character escaped at ``s[i]`` (just after a backslash) and the index after it."""
    c = s[i]
    if c == "x":
        return chr(int(s[i + 1:i + 3], 16)), i + 3
    if c == "u":
        return chr(int(s[i + 1:i + 5], 16)), i + 5
    if c == "U":
        return chr(int(s[i + 1:i + 9], 16)), i + 9
    if c in _ESCAPES:
        return _ESCAPES[c], i + 1
    raise GrammarError(f"unknown escape \\{c}")


def _literal(s: str, i: int) -> tuple[str, int]:
    out = []
    while True:
        if i >= len(s):
            raise GrammarError("a literal is not closed")
        c = s[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\":
            c, i = _escape(s, i + 1)
        else:
            i += 1
        out.append(c)


def _char_class(s: str, i: int):
    negated = i < len(s) and s[i] == "^"
    i += negated
    ranges = []
    while True:
        if i >= len(s):
            raise GrammarError("a character class is not closed")
        if s[i] == "]":
            return (negated, tuple(ranges)), i + 1
        if s[i] == "\\":
            lo, i = _escape(s, i + 1)
        else:
            lo, i = s[i], i + 1
        hi = lo
        if i + 1 < len(s) and s[i] == "-" and s[i + 1] != "]":
            if s[i + 1] == "\\":
                hi, i = _escape(s, i + 2)
            else:
                hi, i = s[i + 1], i + 2
        ranges.append((ord(lo), ord(hi)))
