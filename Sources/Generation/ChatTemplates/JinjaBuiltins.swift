// The names the interpreter implements, so the parser can refuse anything else when a template is
// loaded rather than when a prompt is rendered.

enum JinjaBuiltins {
    /// Filters implemented in `JinjaInterpreter+Filters.swift`.
    static let filters: Set<String> = [
        "abs", "attr", "capitalize", "count", "d", "default", "e", "escape", "first", "float", "indent", "int", "items",
        "join", "last", "length", "list", "lower", "map", "reject", "rejectattr", "replace", "reverse", "round", "safe",
        "select", "selectattr", "string", "sum", "title", "tojson", "trim", "upper",
    ]

    /// Jinja's other built-in filters: valid Jinja, refused as unsupported.
    static let unsupportedFilters: Set<String> = [
        "batch", "center", "dictsort", "filesizeformat", "forceescape", "format", "groupby", "max", "min", "pprint",
        "random", "slice", "sort", "striptags", "truncate", "unique", "urlencode", "urlize", "wordcount", "wordwrap",
        "xmlattr",
    ]

    /// Tests implemented in `JinjaInterpreter+Tests.swift` (`is defined`, `is string`…).
    static let tests: Set<String> = [
        "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "even", "false", "filter", "float", "ge",
        "greaterthan", "gt", "in", "integer", "iterable", "le", "lessthan", "lower", "lt", "mapping", "ne", "none",
        "number", "odd", "sameas", "sequence", "string", "test", "true", "undefined", "upper", "==", "!=", "<", "<=",
        ">", ">=",
    ]

    /// Jinja's other built-in tests: refused as unsupported (`escaped` needs Markup strings).
    static let unsupportedTests: Set<String> = ["escaped"]

    /// Global functions: Jinja's `range`, `namespace` and `dict`, and transformers' `raise_exception`
    /// and `strftime_now`.
    static let functions: Set<String> = ["range", "namespace", "dict", "raise_exception", "strftime_now"]

    /// Jinja's other globals, defined (for `is defined`) but refused when called.
    static let unsupportedFunctions: Set<String> = ["lipsum", "cycler", "joiner"]

    /// Methods of strings, dicts, lists and `loop` implemented in `JinjaInterpreter+Methods.swift`.
    static let methods: Set<String> = [
        // str
        "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "upper", "lower",
        "title", "capitalize", "replace", "find", "rfind", "index", "count", "join", "isdigit", "isalpha", "isalnum",
        "isspace", "islower", "isupper", "removeprefix", "removesuffix",
        // dict
        "items", "keys", "values", "get",
        // loop
        "cycle",
    ]

    /// Python's attribute names of `dict` objects; `d.items` is the method even when the dict has an
    /// `items` key, as in Jinja.
    static let dictionaryAttributes: Set<String> = [
        "clear", "copy", "fromkeys", "get", "items", "keys", "pop", "popitem", "setdefault", "update", "values",
    ]

    /// The dict and list methods the immutable sandbox hides (they read as undefined there).
    static let mutatingMethods: Set<String> = [
        "clear", "pop", "popitem", "setdefault", "update", "append", "extend", "insert", "remove", "reverse", "sort",
    ]

    /// Python's attribute names of `str` objects.
    static let stringAttributes: Set<String> = [
        "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find", "format", "format_map",
        "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric",
        "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip", "maketrans", "partition",
        "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit", "rstrip",
        "split",
        "splitlines", "startswith", "strip", "swapcase", "title", "translate", "upper", "zfill",
    ]

    /// Python's attribute names of `list` objects.
    static let listAttributes: Set<String> = [
        "append", "clear", "copy", "count", "extend", "index", "insert", "pop", "remove", "reverse", "sort",
    ]

    /// Statement tags Jinja has that this interpreter refuses.
    static let unsupportedTags: Set<String> = [
        "call", "endcall", "filter", "endfilter", "with", "endwith", "include", "import", "from",
        "extends", "block", "endblock", "autoescape", "endautoescape", "do", "trans", "pluralize", "endtrans", "print",
    ]
}
