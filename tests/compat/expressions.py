#!/usr/bin/env python3
"""Deterministic condition cases for the differential test against asteval.

Prints JSON lines {"expr": str, "namespace": {...}}: a hand-written list covering the condition
language (and nasty inputs), then seeded random expressions over typed namespace values.
Usage: expressions.py [--seed N] [--random N]
"""
import argparse
import json
import random

NAMESPACE = {
    "x": 5, "y": -3, "z": 0, "f": 2.5, "g": -0.5, "big": 12345678901234567890,
    "s": "Hello World", "e": "", "n": None, "t": True, "u": False,
    "l": [3, 1, 2], "m": [], "w": ["a", "b", "c"], "tree": {"a": {"b": [1, 2, {"c": 3}]}},
    "d": {"k": 1, "name": "orrery", "items": [1, 2]}, "status": "SUCCEEDED",
    "count": 3, "ratio": 0.75, "tags": ["fast", "gpu"], "retries": 0, "result": {"ok": True},
    "\ufb02ag": 1, "caf\u00e9": 2, "cafe\u0301": 3,
}

HANDWRITTEN = [
    # literals and truthiness
    "1", "0", "0.0", "-0.0", "''", "'a'", "[]", "[0]", "{}", "{'a': 1}", "()", "(0,)", "None", "True",
    "False", "set()", "{1}", "1e308 * 10", "1_000 == 1000", "0x1f == 31", "0o17 + 0b101",
    # arithmetic
    "7 // 2", "-7 // 2", "7 // -2", "-7 % 3", "7 % -3", "-7.5 // 2", "7.5 % -2", "2 ** 10",
    "2 ** -1", "(-2) ** 3", "-2 ** 2", "10 / 4 == 2.5", "1 / 0", "1 // 0", "1 % 0", "1.0 / 0",
    "0 ** -1", "x / y", "x // y", "x % y", "big * big > 0", "big // 7", "big % 97", "2 ** 0.5",
    "True + True", "True * 3", "f * 2 == 5", "1 + 2 * 3 - 4", "(1 + 2) * 3", "x ** 2 - y ** 2",
    "~x", "-x", "+f", "not x", "x & 3", "x | 8", "x ^ 1", "1 << 10", "1024 >> 3", "-1 >> 5",
    "1 << -1", "3 @ 4", "'a' + 1", "1 + 'a'", "[1] + [2]", "(1,) + (2,)", "'ab' * 3", "3 * 'ab'",
    "[1, 2] * 2", "'a' * -1", "divmod(7, -2) == (-4, -1)", "abs(y)", "abs(-2.5)", "abs('x')",
    "10 / 3 > 3.33", "0.1 + 0.2 == 0.3", "round(0.1 + 0.2, 2) == 0.3",
    # comparisons
    "1 < 2 < 3", "1 < 3 < 2", "3 > 2 > 1 > 0", "x == 5", "x != 5", "1 == 1.0", "True == 1",
    "'a' < 'b'", "'a' < 1", "[1, 2] < [1, 3]", "(1, 2) == (1, 2)", "[1] == (1,)", "None == 0",
    "None < 1", "x >= 5 >= y", "n is None", "n is not None", "x is None", "t is True", "u is False",
    "l == [3, 1, 2]", "d == {'k': 1, 'name': 'orrery', 'items': [1, 2]}", "{1, 2} == {2, 1}",
    "{1} < {1, 2}", "float('nan') == float('nan')", "1 < float('inf')",
    # membership
    "'a' in 'abc'", "'z' in 'abc'", "'' in 'abc'", "1 in 'abc'", "3 in l", "4 not in l",
    "'k' in d", "'missing' in d", "1 in d", "[1] in d", "'fast' in tags", "3 in range(5)",
    "5 in range(5)", "x in 5", "'b' in w", "status in ('SUCCEEDED', 'SKIPPED')",
    # boolean operators
    "x and y", "z and x", "z or x", "e or 'default'", "x > 3 and s", "not (x > 3 or y > 3)",
    "t and u or x", "n or m or e", "l and l[0]", "m and m[0]",
    # ternary
    "x if t else y", "x if u else y", "'yes' if count > 2 else 'no'", "1 if m else 0",
    # subscripts and slices
    "l[0]", "l[-1]", "l[3]", "l[-4]", "l['a']", "w[1:]", "w[::-1]", "w[::2]", "w[5:]", "s[0]",
    "s[-1]", "s[100]", "s[1:5]", "s[::-1] == 'dlroW olleH'", "s[::0]", "d['k']", "d['missing']",
    "tree['a']['b'][2]['c'] == 3", "tree['a']['b'][5]", "x[0]", "n[0]", "l[1:2][0]",
    "l[True]", "l[1.0]", "(1, 2, 3)[1:]", "'abc'[-2:]", "l[-100:100]", "l[::-2]",
    # attributes and methods
    "s.upper() == 'HELLO WORLD'", "s.lower().startswith('hello')", "s.endswith('World')",
    "s.split() == ['Hello', 'World']", "s.split('o')", "' x '.strip() == 'x'", "'--a--'.strip('-')",
    "'xxa'.lstrip('x')", "'axx'.rstrip('x')", "','.join(w) == 'a,b,c'", "','.join(l)",
    "s.replace('l', 'L')", "s.find('o')", "s.find('q')", "s.count('l') == 3", "'123'.isdigit()",
    "'12a'.isdigit()", "'abc'.isalpha()", "''.isalpha()", "s.index('W')", "s.index('q')",
    "d.get('k') == 1", "d.get('missing') is None", "d.get('missing', 3) == 3", "d.get('k', 3)",
    "list(d.keys()) == ['k', 'name', 'items']", "len(d.values()) == 3", "('k', 1) in d.items()",
    "l.count(1)", "l.index(2)", "l.index(9)", "s.nosuch", "s.nosuch()", "x.real", "d.k",
    "s.__class__", "'{}'.format(1)", "s.format", "l.append(4)", "s.title()", "s.swapcase()",
    "'a,b,,c'.split(',')", "'a b  c'.split(' ')", "'a b c'.split(None, 1)", "'a b c'.rsplit(' ', 1)",
    "'line1\\nline2'.splitlines()", "'42'.zfill(5) == '00042'", "s.startswith(('He', 'x'))",
    # builtins
    "len(s) == 11", "len(l)", "len(x)", "len(d)", "len(range(10))", "min(l)", "max(l)",
    "min(3, 1, 2)", "max('abc')", "min([])", "max([], default=0)", "min(w, key=len)", "sum(l)",
    "sum([0.5, 0.25])", "sum(l, 10)", "sum(['a'])", "any(l)", "any([])", "all(m)",
    "all([1, 0])", "any([0, '', None])", "sorted(l) == [1, 2, 3]",
    "sorted(l, reverse=True)[0] == 3", "sorted(w)", "sorted([1, 'a'])", "round(2.5) == 2",
    "round(3.5) == 4", "round(-2.5)", "round(2.675, 2)", "round(1234, -2) == 1200", "round(f)",
    "round(0.5)", "int('42') == 42", "int(' -7 ') == -7", "int('x')", "int(3.9) == 3", "int(-3.9)",
    "int('1_000')", "int('0x1f', 16)", "int(True)", "float('1.5') == 1.5", "float('x')",
    "float('inf') > big", "str(1) == '1'", "str(1.0) == '1.0'", "str(1e16)", "str(0.1)",
    "str(None)", "str([1, 'a'])", "str({'a': 1})", "str((1,))", "str(1e-5)", "str(123.456)",
    "bool([])", "bool('x')", "bool(0.0)", "list('ab')", "list(range(3)) == [0, 1, 2]",
    "list(d)", "tuple(l)", "set(l) == {1, 2, 3}", "dict(a=1)['a']", "dict([('a', 1)])",
    "len(set('aab'))", "range(3)", "range(0)", "list(range(10, 0, -3))", "range(1, 2, 0)",
    "isinstance(x, int)", "isinstance(f, (int, float))", "isinstance(t, int)", "isinstance(s, str)",
    "type(x) == 'int'", "chr(65) == 'A'", "ord('a')", "hex(255)", "bin(5)", "pow(2, 3) == 8",
    "repr('a')", "list(enumerate(w))[1]", "list(zip(l, w))", "list(reversed(l))",
    "abs(True)", "sum([True, True])",
    # comprehensions
    "[i * 2 for i in l] == [6, 2, 4]", "[i for i in l if i > 1]", "len([c for c in s if c == 'l'])",
    "{i: i * i for i in range(3)}[2] == 4", "{c for c in 'aab'} == {'a', 'b'}",
    "[(i, j) for i in range(2) for j in range(2)]", "[k for k, v in d.items() if v == 1]",
    "[i for i in x]", "sum([i for i in range(101)]) == 5050", "[j for i in [[1, 2], [3]] for j in i]",
    "any([t for t in tags if t == 'gpu'])", "[x for x in l] and x == 5", "[i for i in range(3)][-1]",
    "all([v > 0 for v in l])", "[c.upper() for c in w]",
    # identifiers are normalised to NFKC (PEP 3131): a ligature, full-width or mathematical letters
    # read the plain name; the namespace's own keys are not normalised
    "\uff58 == 5", "\U0001d431 + 1 == 6", "\uff43\uff4f\uff55\uff4e\uff54 > 2", "s.\uff55\uff50\uff50\uff45\uff52() == 'HELLO WORLD'",
    "sorted(l, \uff52\uff45\uff56\uff45\uff52\uff53\uff45=True) == [3, 2, 1]", "[\uff4b for \uff4b in l] == l",
    "[k for \uff4b in l] == l", "\u2178", "\ufb01", "\ufb02ag", "\uff34\uff52\uff55\uff45", "\u210c", "x\u0301",
    "\u212b", "caf\u00e9", "cafe\u0301", "\u01c5 or 1", "(lambda \ufb01: \ufb01)(1)", "d.\uff47\uff45\uff54('k') == 1",
    # generator expressions, lambda, walrus and other refused forms
    "any(i > 2 for i in l)", "sum(i for i in l)", "(lambda: 1)()", "(lambda a: a + 1)(2)",
    "sorted(l, key=lambda v: -v)", "(y := 3)", "[*l]", "{**d}", "f(*l)", "len(*[l])",
    "print(1)", "open('x')", "__import__('os')", "eval('1')", "exec('1')", "getattr(s, 'upper')",
    "globals()", "locals()", "vars()", "callable(len)", "iter(l)", "next(iter(l))", "sqrt(4)",
    "pi > 3", "inf > 1", "mean(l)", "b'abc'", "1j", "...", "f'{x}'", "f'{x!r}-{s}'",
    "f'{f:.2f}'", "`x`", "await x", "(yield)", "[i async for i in l]",
    "().__class__.__bases__", "s.__len__()", "type(x).__name__", "l.__class__.__mro__",
    # names
    "undefined_name", "undefined_name > 1", "x > undefined_name", "len(undefined_name)",
    "[q for q in l] and q", "[q for q in l]", "len", "int", "status == 'SUCCEEDED'",
    "result['ok'] and count > retries", "ratio >= 0.5 and 'gpu' in tags",
    # syntax errors
    "", " ", " x", "x = 1", "x == ", "(x", "x)", "if x: y", "import os", "x;y", "x\ny",
    "x +* 2", "'unterminated", "1 if x", "lambda", "x.", "def f(): pass", "x := 1", "a b",
    "1__0", "0777", "f'{'", "\tx", "(x\n)", "x # comment", "x\n", "  ", "\n", "\\", "$x",
    "x ! y", "x <> y", "True = 1", "[x for x in]", "{1: }", "x[]", "print 1", "a..b",
    # nasty and resource exhaustion
    "9**9**9", "10**10**10", "2**10001", "2**10000 > 0", "'a' * 10**12", "'a' * 262145",
    "'a' * 262144 == 'a' * 262144", "10**12 * 'a'", "[0] * 10**9", "(0,) * 10**9",
    "list(range(10**12))", "len(range(10**12))", "10**12 in range(10**13)", "1 << 1001",
    "1 << 1000 > 0", "2.0 ** 10001", "10.0 ** 400", "1e308 * 10 > 0", "-(1 << 999) < 0",
    "str(10**5000)", "len(str(10**4000)) == 4001", "int('9' * 5000)", "big ** 100 > 0",
    "[[i for i in range(1000)] for j in range(1000)] and True",
    "((((((((((x))))))))))", "(" * 150 + "x" + ")" * 150, "(" * 250 + "x" + ")" * 250,
    "not " * 50 + "x", "-" * 500 + "x", "x" + " + x" * 2000, "[" * 100 + "]" * 100,
    "x and " * 300 + "x", "x" + " + x" * 2986, "x" + " + x" * 2987, "-" * 2987 + "x",
    "not " * 2986 + "x", "x" + ".a" * 2987, "x" + "[0]" * 2986,
]


def random_value(rng):
    kind = rng.choice(["int", "int", "float", "str", "bool", "none", "list", "dict"])
    if kind == "int":
        return rng.choice([0, 1, -1, 2, 7, -13, 100, 2 ** 40, -(2 ** 70)])
    if kind == "float":
        return rng.choice([0.0, 0.5, -2.25, 3.0, 1e-7, 1e20, 123.456])
    if kind == "str":
        return rng.choice(["", "a", "abc", "A b", "42", "x,y", "ünï"])
    if kind == "bool":
        return rng.choice([True, False])
    if kind == "none":
        return None
    if kind == "list":
        return [random_value(rng) for _ in range(rng.randint(0, 3)) if True]
    return {k: random_value(rng) for k in rng.sample(["a", "b", "k"], rng.randint(0, 2))}


ATOMS = ["a", "b", "c", "0", "1", "2", "-1", "2.5", "'a'", "''", "None", "True", "False", "[]",
         "[1, 2]", "(1, 'a')", "{'a': 1}", "3.0"]
BINARY = ["+", "-", "*", "/", "//", "%", "**", "==", "!=", "<", "<=", ">", ">=", "and", "or",
          "in", "not in", "is", "is not", "&", "|", "^", "<<", ">>"]
UNARY = ["not ", "-", "+", "~"]
CALLS = ["len({})", "str({})", "bool({})", "abs({})", "int({})", "float({})", "round({})",
         "min({}, 1)", "max({}, 1)", "sorted({})", "list({})", "sum({})", "any({})", "all({})",
         "{}[0]", "{}[-1]", "{}[1:]", "{}.get('a')", "{}.upper()", "{}.split()", "{}.count(1)",
         "[v for v in {}]", "{} if a else b", "type({})", "tuple({})", "set({})"]


def random_expr(rng, depth=0):
    roll = rng.random()
    if depth > 2 or roll < 0.3:
        return rng.choice(ATOMS)
    if roll < 0.65:
        return f"({random_expr(rng, depth + 1)} {rng.choice(BINARY)} {random_expr(rng, depth + 1)})"
    if roll < 0.75:
        return f"{rng.choice(UNARY)}{random_expr(rng, depth + 1)}"
    return rng.choice(CALLS).format(random_expr(rng, depth + 1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--random", type=int, default=400)
    options = parser.parse_args()
    for expr in HANDWRITTEN:
        print(json.dumps({"expr": expr, "namespace": NAMESPACE}))
    rng = random.Random(options.seed)
    for _ in range(options.random):
        namespace = {name: random_value(rng) for name in ("a", "b", "c")}
        print(json.dumps({"expr": random_expr(rng), "namespace": namespace}))


if __name__ == "__main__":
    main()
