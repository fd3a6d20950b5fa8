"""Itanium C++ ABI names (`_ZN5aiter...`), demangled where the demangling is certain.

Most profilers demangle kernel names before they write them; some names reach a trace
mangled all the same: AMD's assembly and Composable Kernel kernels (`_ZN5aiter...`,
`_ZN7ck_tile6kentry...`, `_ZN2ck16tensor_operation...`) in torch.profiler traces on ROCm,
often with the kernel-descriptor suffix `.kd`. `demangle` turns such a name into what
GNU c++filt prints (`void aiter::add_rmsnorm_quant_kernel<std::bfloat16_t, 256, ...>(...)`),
for the parts of the grammar real kernel names use: nested and local names, templates and
their arguments (types, integer and enum literals, argument packs), substitutions,
template parameters, pointers, references and cv-qualifiers, function types, lambdas and
unnamed types, clone suffixes. Anything else (expressions, decltype, vector types, ...)
makes it return None, and the caller keeps the raw name: a half-right name is worse than
the mangled one. Pure: no subprocess, no I/O.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

# Builtin types (not substitution candidates), as c++filt spells them.
_BUILTIN = {
    "v": "void",
    "w": "wchar_t",
    "b": "bool",
    "c": "char",
    "a": "signed char",
    "h": "unsigned char",
    "s": "short",
    "t": "unsigned short",
    "i": "int",
    "j": "unsigned int",
    "l": "long",
    "m": "unsigned long",
    "x": "long long",
    "y": "unsigned long long",
    "n": "__int128",
    "o": "unsigned __int128",
    "f": "float",
    "d": "double",
    "e": "long double",
    "g": "__float128",
    "z": "...",
}
_BUILTIN_D = {
    "Dn": "decltype(nullptr)",
    "Dh": "half",
    "Di": "char32_t",
    "Ds": "char16_t",
    "Du": "char8_t",
    "Da": "auto",
    "Dc": "decltype(auto)",
}
# Integer literal suffixes c++filt writes (`2048l`, `3ul`); other integral types get a cast.
_LITERAL_SUFFIX = {"i": "", "j": "u", "l": "l", "m": "ul", "x": "ll", "y": "ull"}
# c++filt writes the standard abbreviations out in full.
_STD_ABBREVIATIONS = {
    "a": "std::allocator",
    "b": "std::basic_string",
    "s": "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
    "i": "std::basic_istream<char, std::char_traits<char> >",
    "o": "std::basic_ostream<char, std::char_traits<char> >",
    "d": "std::basic_iostream<char, std::char_traits<char> >",
}
# Operator names (`cl`: a lambda's call operator, the one kernel names carry most).
_OPERATORS = {
    "nw": "operator new",
    "na": "operator new[]",
    "dl": "operator delete",
    "da": "operator delete[]",
    "ps": "operator+",
    "ng": "operator-",
    "ad": "operator&",
    "de": "operator*",
    "co": "operator~",
    "pl": "operator+",
    "mi": "operator-",
    "ml": "operator*",
    "dv": "operator/",
    "rm": "operator%",
    "an": "operator&",
    "or": "operator|",
    "eo": "operator^",
    "aS": "operator=",
    "pL": "operator+=",
    "mI": "operator-=",
    "mL": "operator*=",
    "dV": "operator/=",
    "rM": "operator%=",
    "aN": "operator&=",
    "oR": "operator|=",
    "eO": "operator^=",
    "ls": "operator<<",
    "rs": "operator>>",
    "lS": "operator<<=",
    "rS": "operator>>=",
    "eq": "operator==",
    "ne": "operator!=",
    "lt": "operator<",
    "gt": "operator>",
    "le": "operator<=",
    "ge": "operator>=",
    "nt": "operator!",
    "aa": "operator&&",
    "oo": "operator||",
    "pp": "operator++",
    "mm": "operator--",
    "cm": "operator,",
    "pm": "operator->*",
    "pt": "operator->",
    "cl": "operator()",
    "ix": "operator[]",
}


class _Unsupported(Exception):
    """A construct this demangler does not handle, or malformed input."""


# ----------------------------------------------------------------------- the tree


class _Node:
    def text(self) -> str:
        return self.decl("")

    def decl(self, inner: str) -> str:
        """The node as a declaration around `inner` (`*`, `&`, ` const`, ...)."""
        return self.text_base() + inner

    def text_base(self) -> str:
        raise NotImplementedError


@dataclass
class _Plain(_Node):
    value: str

    def text_base(self) -> str:
        return self.value


@dataclass
class _Qualified(_Node):
    scope: _Node
    name: _Node

    def text_base(self) -> str:
        return f"{self.scope.text()}::{self.name.text()}"


@dataclass
class _Template(_Node):
    name: _Node
    args: list[_Node]

    def text_base(self) -> str:
        inner, last = _arglist(self.args)
        name = self.name.text()
        opening = " <" if name.endswith("<") else "<"  # `operator<< <T>`
        close = " >" if last == ">" else ">"  # `A<B<int> >`, as c++filt writes it
        return f"{name}{opening}{inner}{close}"


@dataclass
class _Pack(_Node):
    items: list[_Node]

    def text_base(self) -> str:
        return _arglist(self.items)[0]


def _arglist(items: list[_Node]) -> tuple[str, str | None]:
    """Arguments as c++filt joins them, and the last character it believes it wrote.

    It writes the list as a chain, head then `, ` and the rest; when the rest prints
    nothing (empty packs at the end) it takes the `, ` back but its last character stays
    the space, so no `> >` follows. An empty pack before other arguments leaves `, , `.
    """
    if not items:
        return "", None
    head = items[0]
    text, last = _arglist(head.items) if isinstance(head, _Pack) else (head.text(), None)
    if text and last is None:
        last = text[-1]
    if len(items) > 1:
        rest, rest_last = _arglist(items[1:])
        if rest:
            text += ", " + rest
            last = rest_last
        else:
            last = " "
    return text, last


@dataclass
class _Modified(_Node):
    """A pointer, reference or cv-qualified type: `inner*`, `inner const`."""

    inner: _Node
    mark: str  # "*", "&", "&&", " const", " volatile", " restrict"

    def decl(self, inner: str) -> str:
        if self.mark in _REFERENCES and isinstance(self.inner, _Modified) and self.inner.mark in _REFERENCES:
            # A reference to a reference (through a template parameter) collapses.
            mark = "&" if "&" in (self.mark, self.inner.mark) else "&&"
            return self.inner.inner.decl(mark + inner)
        if self.mark not in _REFERENCES and self.mark != "*" and self.mark in _cv_marks(self.inner):
            return self.inner.decl(inner)  # `const` on a parameter that already is const
        return self.inner.decl(self.mark + inner)


def _cv_marks(node: _Node) -> set[str]:
    marks = set()
    while isinstance(node, _Modified) and node.mark not in (*_REFERENCES, "*"):
        marks.add(node.mark)
        node = node.inner
    return marks


_REFERENCES = ("&", "&&")


@dataclass
class _Function(_Node):
    ret: _Node | None
    params: list[_Node]

    def params_text(self) -> str:
        if len(self.params) == 1 and isinstance(self.params[0], _Plain) and self.params[0].value == "void":
            return "()"
        return "(" + _arglist(self.params)[0] + ")"

    def decl(self, inner: str) -> str:
        ret = self.ret.text() if self.ret is not None else ""
        return f"{ret} ({inner})" + self.params_text() if inner else f"{ret} " + self.params_text()


@dataclass
class _Encoding(_Node):
    """A function: its name, return type (templates only), parameters and the
    qualifiers of a member function."""

    name: _Node
    function: _Function
    qualifiers: str = ""

    def text_base(self) -> str:
        ret = f"{self.function.ret.text()} " if self.function.ret is not None else ""
        return ret + self.without_return()

    def without_return(self) -> str:
        """As a local name's scope is printed: no return type."""
        return f"{self.name.text()}{self.function.params_text()}{self.qualifiers}"


@dataclass
class _Local(_Node):
    function: _Node
    entity: _Node

    def text_base(self) -> str:
        scope = self.function.without_return() if isinstance(self.function, _Encoding) else self.function.text()
        return f"{scope}::{self.entity.text()}"


@dataclass
class _NameWithQualifiers:
    """A nested name and the cv/ref qualifiers it carried (`NK...E`: a const member)."""

    node: _Node
    qualifiers: str = ""
    is_template: bool = False
    is_ctor_dtor: bool = False


def _expand(pattern: _Node) -> _Pack:
    """A pack expansion (`Dp`): the pattern once per element of the pack inside it
    (`DpOT_` with T_ = {int, float}: `int&&, float&&`)."""
    marks: list[str] = []
    node = pattern
    while isinstance(node, _Modified):
        marks.append(node.mark)
        node = node.inner
    if not isinstance(node, _Pack):
        raise _Unsupported("a pack expansion of something other than a known pack")
    items: list[_Node] = []
    for item in node.items:
        for mark in reversed(marks):
            item = _Modified(item, mark)
        items.append(item)
    return _Pack(items)


def _class_name(node: _Node) -> str:
    """The unqualified name of a class (`std::allocator<char>` -> `allocator`)."""
    while isinstance(node, _Template | _Qualified):
        node = node.name
    return node.text().split("<", 1)[0].rsplit("::", 1)[-1]


# --------------------------------------------------------------------- the parser


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.subs: list[_Node] = []
        self.template_args: list[_Node] | None = None
        self.depth = 0

    # -- input --------------------------------------------------------------
    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def take(self, prefix: str) -> bool:
        if self.s.startswith(prefix, self.i):
            self.i += len(prefix)
            return True
        return False

    def expect(self, prefix: str) -> None:
        if not self.take(prefix):
            raise _Unsupported(f"expected {prefix!r} at {self.i}")

    def number(self) -> int:
        start = self.i
        while self.peek().isdigit():
            self.i += 1
        if start == self.i:
            raise _Unsupported(f"expected a number at {start}")
        return int(self.s[start : self.i])

    def seq_id(self, base: int = 36) -> int:
        """The index of `S<seq-id>_` (base 36) or `T<n>_` (base 10), shifted by one:
        `_` alone is 0."""
        if self.take("_"):
            return 0
        start = self.i
        while self.peek().isdigit() or (base == 36 and self.peek().isupper()):
            self.i += 1
        if start == self.i:
            raise _Unsupported(f"expected a sequence id at {start}")
        value = int(self.s[start : self.i], base)
        self.expect("_")
        return value + 1

    def guard(self) -> None:
        self.depth += 1
        if self.depth > 400:
            raise _Unsupported("nesting too deep")

    # -- top level ----------------------------------------------------------
    def mangled_name(self) -> _Node:
        self.expect("_Z")
        node = self.encoding()
        suffix = ""
        while self.peek() == ".":
            if not isinstance(node, _Encoding):
                raise _Unsupported("a clone suffix after a name that is not a function")  # as c++filt
            suffix += self.clone_suffix()
        if self.i != len(self.s):
            raise _Unsupported(f"unparsed text at {self.i}")
        return _Plain(node.text() + suffix) if suffix else node

    def clone_suffix(self) -> str:
        start = self.i
        self.i += 1
        if not (self.peek().isalpha() or self.peek() == "_"):
            raise _Unsupported("clone suffix")
        while self.peek().isalpha() or self.peek() == "_":
            self.i += 1
        while self.peek() == "." and self.peek(1).isdigit():
            self.i += 1
            while self.peek().isdigit():
                self.i += 1
        return f" [clone {self.s[start : self.i]}]"

    def encoding(self) -> _Node:
        self.guard()
        if self.peek() in ("T", "G") or self.s.startswith(("Th", "Tv", "Tc"), self.i):
            raise _Unsupported("special names")
        named = self.name()
        if self.peek() in ("", "E", "."):
            self.depth -= 1
            return named.node
        saved = self.template_args
        if named.is_template:
            self.template_args = named.node.args if isinstance(named.node, _Template) else self._last_args(named.node)
        ret = self.type() if named.is_template and not named.is_ctor_dtor else None
        params = self.bare_function_type()
        self.template_args = saved
        self.depth -= 1
        return _Encoding(named.node, _Function(ret, params), named.qualifiers)

    @staticmethod
    def _last_args(node: _Node) -> list[_Node]:
        while isinstance(node, _Qualified):
            node = node.name
        if isinstance(node, _Template):
            return node.args
        raise _Unsupported("template arguments not found")

    def bare_function_type(self) -> list[_Node]:
        params = []
        while self.peek() not in ("", "E", "."):
            params.append(self.type())
        if not params:
            raise _Unsupported("a function with no parameter types")
        return params

    # -- names --------------------------------------------------------------
    def name(self) -> _NameWithQualifiers:
        c = self.peek()
        if c == "N":
            return self.nested_name()
        if c == "Z":
            return self.local_name()
        if c == "S" and self.peek(1) != "t":
            sub = self.substitution()
            if self.peek() != "I":
                raise _Unsupported("a substitution as a whole name")
            return _NameWithQualifiers(_Template(sub, self.template_args_list()), is_template=True)
        node: _Node
        if self.take("St"):
            unqualified, _ = self.unqualified_name()
            node = _Qualified(_Plain("std"), unqualified)
        else:
            node, _ = self.unqualified_name()
        if self.peek() == "I":
            self.subs.append(node)
            args = self.template_args_list()
            return _NameWithQualifiers(_Template(node, args), is_template=True)
        return _NameWithQualifiers(node)

    def cv_qualifiers(self) -> str:
        out = []
        for mark, word in (("r", " restrict"), ("V", " volatile"), ("K", " const")):
            if self.take(mark):
                out.append(word)
        return "".join(reversed(out))

    def nested_name(self) -> _NameWithQualifiers:
        self.expect("N")
        quals = self.cv_qualifiers()
        if self.take("R"):
            quals += " &"
        elif self.take("O"):
            quals += " &&"
        node: _Node | None = None
        is_template = is_ctor_dtor = False
        last_name = ""
        while not self.take("E"):
            c = self.peek()
            from_sub = False
            if c == "S" and node is None:
                if self.take("St"):
                    node = _Plain("std")
                    continue
                node = self.substitution()
                from_sub = True
            elif c == "I":
                if node is None:
                    raise _Unsupported("template arguments with no name")
                node = _Template(node, self.template_args_list())
                is_template = True
            elif c == "T":
                if node is not None:
                    raise _Unsupported("a template parameter inside a prefix")
                node = self.template_param()
            elif c in "CD" and node is not None and self.peek(1) in "0123459":
                is_ctor_dtor = True
                node = _Qualified(node, self.ctor_dtor(last_name or _class_name(node)))
                is_template = False
            else:
                part, last = self.unqualified_name()
                last_name = last or last_name
                node = part if node is None else _Qualified(node, part)
                is_template = False
            if self.peek() != "E" and not from_sub:
                self.subs.append(node)
        if node is None:
            raise _Unsupported("an empty nested name")
        return _NameWithQualifiers(node, quals, is_template, is_ctor_dtor)

    def ctor_dtor(self, class_name: str) -> _Node:
        if not class_name:
            raise _Unsupported("a constructor with no class")
        kind = self.s[self.i]
        self.i += 2
        return _Plain(class_name if kind == "C" else "~" + class_name)

    def unqualified_name(self) -> tuple[_Node, str]:
        """A name component and its plain identifier (for constructors), or ''."""
        c = self.peek()
        if c == "L":  # internal linkage
            self.i += 1
            return self.unqualified_name()
        if c.isdigit():
            ident = self.source_name()
            node: _Node = _Plain(ident)
        elif c == "U":
            node, ident = self.unnamed_type(), ""
        elif self.s[self.i : self.i + 2] in _OPERATORS:
            node, ident = _Plain(_OPERATORS[self.s[self.i : self.i + 2]]), ""
            self.i += 2
        else:
            raise _Unsupported(f"name component {c!r}")
        while self.take("B"):
            node = _Plain(f"{node.text()}[abi:{self.source_name()}]")
        return node, ident

    def source_name(self) -> str:
        n = self.number()
        ident = self.s[self.i : self.i + n]
        if len(ident) != n:
            raise _Unsupported("a name runs past the end")
        self.i += n
        if ident.startswith("_GLOBAL_") and len(ident) > 9 and ident[8] in "._$" and ident[9] == "N":
            return "(anonymous namespace)"
        return ident

    def unnamed_type(self) -> _Node:
        if self.take("Ut"):
            n = self.number() + 2 if self.peek().isdigit() else 1
            self.expect("_")
            return _Plain(f"{{unnamed type#{n}}}")
        if self.take("Ul"):
            params = []
            while not self.take("E"):
                params.append(self.type())
            n = self.number() + 2 if self.peek().isdigit() else 1
            self.expect("_")
            sig = _Function(None, params).params_text()
            return _Plain(f"{{lambda{sig}#{n}}}")
        raise _Unsupported("vendor-extended name")

    def local_name(self) -> _NameWithQualifiers:
        self.expect("Z")
        function = self.encoding()
        self.expect("E")
        if self.take("s"):
            self.discriminator()
            return _NameWithQualifiers(_Local(function, _Plain("string literal")))
        entity = self.name()
        self.discriminator()
        return _NameWithQualifiers(
            _Local(function, entity.node), entity.qualifiers, entity.is_template, entity.is_ctor_dtor
        )

    def discriminator(self) -> None:
        if self.take("__"):
            self.number()
            self.expect("_")
        elif self.peek() == "_" and self.peek(1).isdigit():
            self.i += 2

    def substitution(self) -> _Node:
        self.expect("S")
        c = self.peek()
        if c in _STD_ABBREVIATIONS:
            self.i += 1
            return _Plain(_STD_ABBREVIATIONS[c])
        index = self.seq_id()
        if index >= len(self.subs):
            raise _Unsupported("a substitution out of range")
        return self.subs[index]

    def template_param(self) -> _Node:
        self.expect("T")
        index = self.seq_id(base=10)
        if self.template_args is None or index >= len(self.template_args):
            raise _Unsupported("a template parameter with no argument")
        return self.template_args[index]

    def template_args_list(self) -> list[_Node]:
        self.expect("I")
        args = []
        while not self.take("E"):
            args.append(self.template_arg())
        return args

    def template_arg(self) -> _Node:
        c = self.peek()
        if c == "L":
            return self.literal()
        if c == "J":
            self.i += 1
            items = []
            while not self.take("E"):
                items.append(self.template_arg())
            return _Pack(items)
        if c == "X":
            # Of the expressions, only a template parameter standing alone (`XT0_E`).
            self.i += 1
            if self.peek() != "T":
                raise _Unsupported("an expression")
            node = self.template_param()
            self.expect("E")
            return node
        return self.type()

    def literal(self) -> _Node:
        self.expect("L")
        if self.peek() == "_":
            raise _Unsupported("an external name in a literal")
        c = self.peek()
        if c in _BUILTIN and c not in "vz":
            self.i += 1
            value = self.literal_value()
            if c == "b":
                text = {"0": "false", "1": "true"}.get(value)
                if text is None:
                    raise _Unsupported("a bool literal")
            elif c in _LITERAL_SUFFIX:
                text = value + _LITERAL_SUFFIX[c]
            elif c in "fdeg":
                raise _Unsupported("a floating-point literal")
            else:
                text = f"({_BUILTIN[c]}){value}"
            self.expect("E")
            return _Plain(text)
        kind = self.type()
        value = self.literal_value()
        self.expect("E")
        return _Plain(f"({kind.text()}){value}")

    def literal_value(self) -> str:
        negative = self.take("n")
        start = self.i
        while self.peek().isdigit():
            self.i += 1
        if start == self.i:
            raise _Unsupported("a literal without a value")
        return ("-" if negative else "") + self.s[start : self.i]

    # -- types --------------------------------------------------------------
    def type(self) -> _Node:
        self.guard()
        node = self._type()
        self.depth -= 1
        return node

    def _type(self) -> _Node:
        c = self.peek()
        if c in _BUILTIN:
            self.i += 1
            return _Plain(_BUILTIN[c])
        two = self.s[self.i : self.i + 2]
        if two in _BUILTIN_D:
            self.i += 2
            return _Plain(_BUILTIN_D[two])
        if two == "DF":
            return self.float_type()
        if two == "Dp":  # a pack expansion: the pack's types, as the arguments were given
            self.i += 2
            pack = _expand(self.type())
            self.subs.append(pack)
            return pack
        if c in "rVK":
            quals = self.cv_qualifiers()
            inner = self.type()
            node: _Node = inner
            for word in quals.split():
                node = _Modified(node, " " + word)
            self.subs.append(node)
            return node
        if c in "PRO":
            self.i += 1
            inner = self.type()
            node = _Modified(inner, {"P": "*", "R": "&", "O": "&&"}[c])
            self.subs.append(node)
            return node
        if c == "F":
            self.i += 1
            self.take("Y")
            ret = self.type()
            params = []
            while not self.take("E"):
                if self.peek() in "RO" and self.peek(1) == "E":
                    raise _Unsupported("a ref-qualified function type")
                params.append(self.type())
            node = _Function(ret, params)
            self.subs.append(node)
            return node
        if c == "T":
            node = self.template_param()
            self.subs.append(node)
            if self.peek() == "I":
                node = _Template(node, self.template_args_list())
                self.subs.append(node)
            return node
        if c == "S":
            if self.s.startswith("St", self.i):
                named = self.name()
                node = named.node
                self.subs.append(node)
                return node
            node = self.substitution()
            if self.peek() == "I":
                node = _Template(node, self.template_args_list())
                self.subs.append(node)
            return node
        if c == "u":
            self.i += 1
            node = _Plain(self.source_name())
            self.subs.append(node)
            return node
        if c in "NZ" or c.isdigit():
            named = self.name()
            self.subs.append(named.node)
            return named.node
        raise _Unsupported(f"type {c!r}")

    def float_type(self) -> _Node:
        self.expect("DF")
        if self.take("16b"):
            return _Plain("std::bfloat16_t")
        bits = self.number()
        if self.take("x"):
            return _Plain(f"_Float{bits}x")
        self.expect("_")
        return _Plain(f"_Float{bits}")


@functools.lru_cache(maxsize=4096)
def demangle(name: str) -> str | None:
    """What GNU c++filt prints for an Itanium-mangled name (`_Z...`), or None when the
    name is not mangled or uses a part of the grammar this module does not read."""
    if not name.startswith("_Z"):
        return None
    parser = _Parser(name)
    try:
        return parser.mangled_name().text()
    except (_Unsupported, RecursionError, IndexError, ValueError):
        return None


def demangled(name: str) -> str:
    """The name as a person reads it: demangled where that is certain, else as it came."""
    return demangle(name) or name
