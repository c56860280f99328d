"""The vault: a graded run's outcomes, the guard's and seal's findings and the report's key (inside an HMAC object),
kept in the suspended frame of a generator that only an audit hook resumes; it checks the seal and the test
functions, looks for values that compare as they like, and writes and signs the report.

Part of the report plugin (``frog_report``, which loads it from this folder, never through ``sys.path``, and
keeps it out of ``sys.modules``, and opens the vault last, before any code under test runs). :func:`open_vault`
relies on the standard library and on what ``frog_report`` hands it (the FIFO and its reader, the seal and its
tables, the plugin's hooks and module, the namespaces of the plugin's own code): every function it leaves behind
binds what it uses as closure cells or default arguments, builtins and exception classes included, so that
nothing is looked up in this module's globals (code under test can reach them through any function's
``__globals__``) once the vault is open.
"""

import os
import sys

_BEHAVIOUR_SLOTS = (
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__", "__len__", "__contains__",
    "__format__", "__add__", "__radd__", "__iadd__", "__rsub__", "__rmul__", "__rmod__", "__rtruediv__", "__ror__",
    "__rand__", "__index__", "__instancecheck__", "__subclasscheck__")
"""frog_gym.grading.integrity.BEHAVIOUR_SLOTS (the report plugin imports nothing of frog_gym; a test keeps the two equal)."""


def library_slots(root):
    """The functions that the classes alive now hold in a comparison or format slot (:data:`_BEHAVIOUR_SLOTS`, through
    a method, static or class method, partial or property, as ``lying_values`` unwraps them) with code of a file
    outside ``root`` (the repository), generated code (``<...>``) left out. Read by a grading server's parent, where no
    code of a package under test ever ran: a child's vault takes them as judged (``fine``), instead of reading each
    one's code again at its first walk (an audit event each)."""
    import functools
    import types

    slots, out, seen, todo = frozenset(_BEHAVIOUR_SLOTS), [], set(), [object]
    prefix = root.rstrip("/") + "/"
    dict_of = type.__dict__["__dict__"].__get__
    while todo:
        for cls in type.__subclasses__(todo.pop()):
            if id(cls) in seen:
                continue
            seen.add(id(cls))
            todo.append(cls)
            for k, v in list(dict_of(cls).items()):
                if type(k) is not str or k not in slots:
                    continue
                for _ in range(8):
                    t = type(v)
                    if t is staticmethod or t is classmethod or t is types.MethodType:
                        v = v.__func__
                    elif t is functools.partial:
                        v = v.func
                    elif t is property:
                        v = v.fget
                    else:
                        break
                if type(v) is types.FunctionType:
                    name = v.__code__.co_filename
                    if type(name) is str and not name.startswith(("<", prefix)):
                        out.append(v)
    return tuple(out)


def compiled_keys(name, _open=open, _compile=compile, _type=type, _code=type(library_slots.__code__),
                  _set=set, _frozenset=frozenset, _errors=(OSError, ValueError, SyntaxError)):
    """What the file ``name`` compiles to, as the import system compiles it: a frozenset of the (name, first line,
    bytecode) of every code object in it (empty where it can't be read or compiled). Its defaults bind what it
    calls, so that a copy of it (``FunctionType(compiled_keys.__code__, ...)``) made before any code under test runs
    is out of its reach. A grading server's parent runs it for the files of the plugins it preloaded
    (``frog_server.LIBRARY_AHEAD``): outside the repository, those files are read-only mounts, so a child's vault
    takes the parent's answer instead of compiling each of them again."""
    found = _set()
    try:
        with _open(name, "rb") as f:
            todo = [_compile(f.read(), name, "exec", 0, True)]
    except _errors:
        todo = []
    while todo:
        c = todo.pop()
        found.add((c.co_name, c.co_firstlineno, c.co_code))
        todo.extend([k for k in c.co_consts if _type(k) is _code])
    return _frozenset(found)


def library_ahead(files, root):
    """:func:`compiled_keys` of each of ``files`` outside ``root`` (a grading server's parent, before it forks)."""
    prefix = root.rstrip("/") + "/"
    return {f: compiled_keys(f) for f in files if type(f) is str and not f.startswith(prefix) and f.endswith(".py")}


# -- the vault: what a graded run's report is made of, out of the reach of code under test ------------------

def open_vault(key_fifo, read_exactly, guard, flags, sealed, hot_modules, hot_hooks, ours, plugin, own,
               select, code_of, known=None, fine=None, ahead_code=None, code_keys=None, library=None,
               accel=None):
    """Keep a graded run's outcomes, the guard's and seal's findings, and the key (inside an HMAC object), where
    code under test can't reach them: in the suspended frame of a generator that only an audit hook (PEP 578)
    resumes. Nothing in Python refers to an installed audit hook, and the ways to find one anyway (the garbage
    collector, ctypes) are refused by the guard, as is the generator's frame; the report plugin's globals, by
    contrast, are one ``sys.modules`` lookup away (this module's one ``__globals__`` further), and a package that
    rebinds a signer, rewrites recorded outcomes or registers a plugin of its own would otherwise forge a pass. While the vault runs, no code of the package can:
    its signal handlers are swapped for one that defers the signal, the collector is off (no finaliser runs), and
    no audit hook may be added (the guard); the process's memory is refused through ``/proc`` (the guard).

    The report plugin's hooks hand the vault what pytest gives them, as audit events (``frog.vault.*``). The vault
    takes an event only from the hook function it expects, called on the main thread inside pytest's session with
    no frame of the package's (or of code compiled from a string) on the stack, and for the test pytest is running
    (between its ``logstart`` and ``logfinish``); anything else is recorded as tampering. A report given twice for
    one phase keeps the worse outcome, and a report that says passed for a phase whose call raised (pytest's
    call information, read before any other implementation of ``pytest_runtest_makereport`` runs) is tampering. Before pytest calls a test, the vault checks that the test's function, its
    ``runtest``, its class and the definition its module or class holds are not code the package made (a package
    that swaps the test functions of the tests that call it for ones that do nothing passes them all). At each report of a graded file's test (and fully at each canary and at the
    end) it checks the seal: pytest's and pluggy's modules and classes, and every implementation of the hooks a
    report passes through (a plugin the package registered), using only what it bound when it was made (the
    builtins included: code under test may rebind those too). At the end it writes and signs the report itself,
    with the C encoder and HMAC, which no Python code can rebind under it.

    ``key_fifo``: grading's FIFO, the key next in it, read with ``read_exactly`` (``frog_key``); ``ours``: event ->
    the report plugin's hook function that raises it; ``plugin``: the report plugin's module, as pytest registered
    it; ``own``: the namespaces of the plugin's modules (their code is not the package's); ``sealed``:
    ``frog_seal.make_seal``'s snapshot, ``hot_modules`` and ``hot_hooks`` the parts of it a report passes through;
    ``flags``: what the guard found before the vault existed; ``guard``: the guard's configuration (or None);
    ``select``: the selection, for its canaries; ``code_of``: ``frog_seal.code_of``; ``known``: the seal and its
    code as the grading server's parent read them (``frog_seal.ahead``), or None; ``fine``: the library functions
    the grading server's parent found in comparison and format slots (:func:`library_slots`), or None;
    ``ahead_code``: what pytest runs of each graded test file and conftest (``frog_guard.test_code``), or None;
    ``code_keys``: ``frog_guard.code_keys``, which keys that code (a copy of it is taken here); ``library``: what
    library files outside the repository compile to (:func:`library_ahead`, a grading server's parent), or None;
    ``accel``: the plugin's C helper (``frog_accel.c``: ``heap_classes``, ``same_names`` and ``same_items``, the walk
    of the classes and the comparisons of their names and of the sealed namespaces, without a Python step per class
    or name), or None; each part taken only where it answers exactly as the Python here does (the signed report's
    ``"vault"`` says which ran)."""
    import _hashlib
    import _json
    import _operator
    import _thread
    import _signal
    import functools
    import gc
    import itertools
    import types

    audit, getframe, get_ident, main_thread = sys.audit, sys._getframe, _thread.get_ident, _thread.get_ident()
    hmac_new, make_encoder, encode_ascii = _hashlib.hmac_new, _json.make_encoder, _json.encode_basestring_ascii
    open_, replace, times, environ_get = open, os.replace, os.times, os.environ.get
    isinstance_, vars_, list_, tuple_, len_, str_, round_, any_, type_ = (
        isinstance, vars, list, tuple, len, str, round, any, type)
    dict_, frozenset_, BaseException_, TypeError_ = dict, frozenset, BaseException, TypeError
    FunctionType, MethodType, partial = types.FunctionType, types.MethodType, functools.partial
    staticmethod_, classmethod_, property_ = staticmethod, classmethod, property
    dict_items, mro_of, dict_of = dict.items, type.__dict__["__mro__"].__get__, type.__dict__["__dict__"].__get__
    getset_type, member_type = type(type.__dict__["__dict__"]), type(type(sys).__dict__["__dict__"])
    # A type whose attributes can't be set (a static type: str, object, a C descriptor's type;
    # Py_TPFLAGS_IMMUTABLETYPE, read through type's own C member) holds nothing the package made: setattr refuses
    # its dictionary, and the ways around that (the garbage collector's referents, ctypes) are refused by the
    # guard. The flag is trusted only where it says so of str and not of a class of Python source (else 0: every
    # type is read)
    flags_of = type.__dict__["__flags__"].__get__
    immutable = 1 << 8 if flags_of(str) & 1 << 8 and not flags_of(functools.partialmethod) & 1 << 8 else 0
    module_type = type(sys)
    # builtins and exception classes the vault's functions use when they run (a name rebound in this module's
    # globals would shadow the builtin, and run the package's code inside the vault)
    reversed_, range_, bool_, object_ = reversed, range, bool, object
    AttributeError_, OSError_, SyntaxError_, ValueError_, GeneratorExit_ = (AttributeError, OSError, SyntaxError,
                                                                            ValueError, GeneratorExit)
    # An object's identity without an audit event (``id()`` raises ``builtins.id``, and every event runs both audit
    # hooks): ``object.__hash__`` is its address, rotated, so unique among live objects, whatever its class says.
    ident = object.__hash__

    join_str, bytes_type, bytes_item, every = "".join, bytes, bytes.__getitem__, slice(None)

    def text_of(name):
        """A code object's name or file name as an exact str: ``code.replace`` takes a str subclass, whose methods
        (``startswith``, ``__eq__``, ``__hash__``) are the package's, so only its characters are read."""
        return name if type_(name) is str_type else join_str((name,))

    def bytes_of(data):
        """``co_code`` as exact bytes (3.10 keeps the object ``code.replace`` was given)."""
        return data if type_(data) is bytes_type else bytes_item(data, every)
    trusted_namespaces = frozenset(ident(type(sys).__dict__["__dict__"].__get__(m)) for m in list(sys.modules.values())
                                   if type(m) is module_type)
    str_type, int_type, float_type, bool_type, int_add, issubclass_ = str, int, float, bool, int.__add__, issubclass
    set_, compile_, code_type = set, compile, types.CodeType
    all_, map_, is_, repeat_, dict_values = all, map, _operator.is_, itertools.repeat, dict.values
    is_not, not_, compress, sorted_ = _operator.is_not, _operator.not_, itertools.compress, sorted
    # the code of every function pytest and pluggy held before any code under test ran (nested code included):
    # the seal's own, told apart by object (what the grading server's parent read is held here, with the objects
    # its ids belong to), and the plugin's own
    keep_known = known if type(known) is tuple and len(known) >= 2 and type(known[1]) is frozenset else None
    sealed_code = code_of(sealed, keep_known) | code_of([(None, None, tuple(d.items())) for d in own])
    # (ids of code objects held alive by the modules sealed, not the package's)
    # Each sealed namespace with its names and their objects apart. A namespace is never looked up by name in
    # place: the package can put a key of its own in pytest's module or class dictionary, with the hash of a sealed
    # name, and a lookup of that name would run the key's __eq__ inside the vault. So a check compares the
    # namespaces of each group it checks, in one C call (no Python code runs in it: no thread of the package's can
    # change a namespace halfway, and no hash or comparison of the package's is made), with the state the last check
    # found as sealed: their sizes as ints, then their keys and values by identity. Where one differs, it takes the
    # group's all at once, in one C call, and reads each namespace that differs from that snapshot: every key must be
    # an exact str, and the sealed names are looked up in a private dictionary made of it (exact str keys: hashed and
    # compared in C).
    chain_, from_iterable, proxy_values = itertools.chain, itertools.chain.from_iterable, types.MappingProxyType.values
    zip_, eq_, getitem_, enumerate_ = zip, _operator.eq, _operator.getitem, enumerate
    first, second = _operator.itemgetter(0), _operator.itemgetter(1)
    sealed = [(where, d, items, tuple_(map_(first, items)), tuple_(map_(second, items)), [])
              for where, d, items in sealed]

    def group(entries):
        """``entries`` (module dictionaries first, then class mappingproxies, the order a snapshot reads them in)
        with their dictionaries and the snapshot last found as sealed."""
        dicts = [e for e in entries if type_(e[1]) is dict_]
        proxies = [e for e in entries if type_(e[1]) is not dict_]
        return dicts + proxies, tuple_(e[1] for e in dicts + proxies), tuple_(e[1] for e in dicts), \
            tuple_(e[1] for e in proxies), []

    # Code under test must never run inside the vault: its frames would lead to the vault's own (and to the
    # key). So nothing here reads an object through Python-level dispatch it may have changed (a class's
    # __getattribute__, a property, a metaclass, __eq__, __hash__, __str__): objects are told apart by exact type
    # (``is``), their attributes read through the C descriptors their pytest or pluggy class had when the vault
    # was made, and dictionaries walked item by item with exact str keys.
    def reader(cls):
        """A function reading an attribute of an exact ``cls`` instance without running Python code (None if absent)."""
        inst_dict, slots = None, {}
        for base in reversed_(mro_of(cls)):
            for name, d in dict_of(base).items():
                if type_(name) is not str_type:
                    continue
                if name == "__dict__" and type_(d) is getset_type:
                    inst_dict = d.__get__
                elif type_(d) is member_type:
                    slots[name] = d.__get__

        def raw(obj):
            d = inst_dict(obj, cls) if inst_dict is not None else None
            return d if type_(d) is dict_ else None

        def items(obj):
            d = raw(obj)
            return [(k, v) for k, v in dict_items(d) if type_(k) is str_type] if d is not None else []

        def read(obj, name):
            get = slots.get(name)
            if get is not None:
                try:
                    return get(obj, cls)
                except AttributeError_:
                    return None
            if inst_dict is None:
                return None
            d = inst_dict(obj, cls)
            if type_(d) is not dict_:
                return None
            for k, v in dict_items(d):
                if type_(k) is str_type and k == name:
                    return v
            return None
        return read, items, raw, slots

    def kind(*bases):
        """The objects of these classes (pytest's or pluggy's, as loaded before any code under test) and of their
        subclasses (read through the C descriptors their classes hold, whoever made them)."""
        return {"bases": tuple_(b for b in bases if b is not None), "known": {}}

    def lookup(obj, k):
        t = type_(obj)
        hit = k["known"].get(ident(t))
        if hit is not None and hit[0] is t:
            return hit
        if any_(issubclass_(t, b) for b in k["bases"]):
            hit = k["known"][ident(t)] = (t, *reader(t))
            return hit
        return None

    modules = sys.modules
    config_module, nodes, reports = modules["_pytest.config"], modules["_pytest.nodes"], modules["_pytest.reports"]
    # pluggy as pytest holds it (a pristine copy where the package under test is pluggy itself): never imported
    # here, where an import could run the package's own copy
    plugin_manager = next(c for c in mro_of(config_module.PytestPluginManager) if c.__name__ == "PluginManager")
    pluggy_globals = plugin_manager.__init__.__globals__
    report_kind, item_kind = kind(reports.BaseReport), kind(nodes.Item)
    pytest_items = tuple_(v for m in ("_pytest.python", "_pytest.unittest", "_pytest.doctest") if m in modules
                          for v in list_(vars_(modules[m]).values()) if isinstance_(v, type_) and issubclass_(v, nodes.Item))
    node_kind, config_kind = kind(nodes.Node), kind(config_module.Config)
    call_kind = kind(modules["_pytest.runner"].CallInfo)
    pm_kind = kind(plugin_manager)
    relay_kind = kind(pluggy_globals.get("HookRelay") or pluggy_globals.get("_HookRelay"))
    caller_kind = kind(pluggy_globals.get("HookCaller") or pluggy_globals.get("_HookCaller"))
    impl_kind = kind(pluggy_globals.get("HookImpl"))

    def field(obj, name, k, *want):
        """``obj.name`` for an object of ``k``'s classes, if its value is exactly of a type in ``want`` (any type
        without ``want``); else None."""
        hit = lookup(obj, k)
        if hit is None:
            return None
        v = hit[1](obj, name)
        if not want:
            return v
        t = type_(v)
        for w in want:
            if t is w:
                return v
        return None

    def instance_items(obj, k):
        """The (exact str name, value) pairs of the instance dictionary of an object of ``k``'s classes (a hook
        relay's hooks); else []."""
        hit = lookup(obj, k)
        return hit[2](obj) if hit is not None else []

    def plain(x, depth=0):
        """A copy of ``x`` made of exact JSON types only (anything else: None), for the C encoder."""
        t = type_(x)
        if x is None or t is str_type or t is int_type or t is float_type or t is bool_type:
            return x
        if depth > 8:
            return None
        if t is list_ or t is tuple_:
            return [plain(v, depth + 1) for v in x]
        if t is dict_:
            return {k: plain(v, depth + 1) for k, v in dict_items(x) if type_(k) is str_type}
        return None

    report_path = environ_get("FROG_REPORT", "")
    wrap_session = sys.modules["_pytest.main"].wrap_session.__code__
    codes = {event: f.__code__ for event, f in ours.items()}
    hooks_of = {f.__name__: f for f in ours.values()}
    functions = frozenset_(ident(f) for f in ours.values())
    me = plugin
    root = os.getcwd()
    code_roots = tuple_(os.path.join(root, str_(c).strip("/")) for c in (guard or {}).get("code", ()))
    test_roots = tuple_(os.path.join(root, str_(t).strip("/")) for t in (guard or {}).get("tests", ()))
    graded_files = frozenset_(str_(f) for f in (guard or {}).get("files", ()))
    values = (guard or {}).get("values") if isinstance_((guard or {}).get("values"), dict_) else {}
    f2p = frozenset_(str_(t) for t in values.get("f2p", ()))
    changed = {str_(f): frozenset_(map(str_, d.get("code", ())))
               for f, d in dict_(values.get("changed") or {}).items() if isinstance_(d, dict_)}
    slots = frozenset_(_BEHAVIOUR_SLOTS)
    subclasses_of, qualname_of = type.__dict__["__subclasses__"], type.__dict__["__qualname__"].__get__
    qual_of = types.CodeType.__dict__["co_qualname"].__get__ if "co_qualname" in types.CodeType.__dict__ else None
    # what a class's slot holds where C code defines it (and ``__hash__ = None``): nothing of the package's. Kept by
    # identity: a set's membership test hashes the value's type, which runs its metaclass's __hash__
    c_kinds = frozenset_(ident(t) for t in (type_(str.__eq__), type_(str.join), type_(len), type_(None),
                                             type_(dict.fromkeys), type_(dict.__dict__["fromkeys"])))
    # pytest's assertion plugin rebinds these module globals around every test (unsealed names): the namespace that
    # holds them would fail every full check's one comparison of all namespaces at once, and make it read them all
    # again each time. It is compared in a group of its own (as every namespace is, by its sealed names where it
    # differs), so that the comparison of the others holds from one full check to the next.
    per_test = ("_reprcompare", "_assertion_pass")
    moving = [type_(e[1]) is dict_ and any_(k in e[1] for k in per_test) for e in sealed]
    hot = (group([e for e in sealed if e[0] in hot_modules or e[0].rsplit(".", 1)[0] in hot_modules]),)
    sealed = (group(list_(compress(sealed, map_(not_, moving)))), group(list_(compress(sealed, moving))))
    canaries = frozenset_(str_(c) for c in select.get("canaries", ())) if isinstance_(select, dict_) else frozenset_()
    state = {"pm": None, "ours": [], "current": None, "opened": False, "finished": False, "made": None,
             "known": keep_known}  # (held: sealed_code took ids of objects it holds)
    phases = {}  # nodeid -> {when: outcome}, in report order
    collect_errors = []
    flagged = list_(flags)
    cleared = {}  # id -> code object of the frames already found not to be the package's (on pytest's stacks)
    # Frames whose way down to pytest's session genuine() has walked, clean (held, so that their ids are never
    # another's; at each test's start, all but those its event runs on are dropped). A frame found here is still
    # running (genuine reached it from the event's own), so every frame below it is the one walked then: a running
    # function's callers are fixed. Not a generator's or coroutine's frame: whoever resumes one next is below it then.
    walked_clean = {}
    resumable = 0x20 | 0x80 | 0x100 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR
    arity = {"configure": 1, "start": 1, "call": 1, "made": 2, "record": 1, "end": 1, "collect_error": 1, "finish": 3}
    module_dict = type(sys).__dict__["__dict__"].__get__

    def flag(message):
        if message not in flagged:
            flagged.append(message)

    def under(name, roots):
        return any_(name == r or name.startswith(r + "/") for r in roots)

    def package_code(name, namespace):
        """Whether code of file ``name`` run in ``namespace`` (its globals) is the package's: its source (not its
        tests), or compiled from a string (``<string>``) in a namespace that no module loaded before the vault
        owns (a dataclass's generated methods live in their module's namespace, pytest's among them)."""
        if name.startswith("<"):
            return ident(namespace) not in trusted_namespaces
        return under(name, code_roots) and not under(name, test_roots)

    def unwrapped(value):
        """The function under a method, static or class method, partial or property (their links are read-only)."""
        for _ in range_(8):
            t = type_(value)
            if t is staticmethod_ or t is classmethod_ or t is MethodType:
                value = value.__func__
            elif t is partial:
                value = value.func
            elif t is property_:
                value = value.fget
            else:
                break
        return value

    def made(value, depth=0):
        """Whether ``value`` is code the package made: a function (unwrapped from methods, partials, properties)
        compiled from the package's source (not its tests) or from no file at all (``compile``/``exec`` of a
        string), or a class, or an instance of a class, with such a function in its MRO's dictionaries. A test
        tool's replacement (freezegun's clock, a mock) comes from a library's file and is pytest's business.
        Exact types only, so that nothing of the package runs here."""
        value = unwrapped(value)
        t = type_(value)
        if t is FunctionType:
            # A function's verdict follows from its code and its globals (read-only) alone, so it is kept, unless its
            # __code__ has been set since the vault opened: the audit event of that (entry() marks the function in
            # ``recoded``) comes before the new code is in place, so a function not marked still has the code it
            # was judged by, and one marked is judged afresh at every check (reading __code__ raises an event).
            hit = judged.get(ident(value))
            if hit is not None and hit[0] is value and recoded.get(ident(value)) is not value:
                return hit[1]
            code = value.__code__
            name = text_of(code.co_filename)
            verdict = package_code(name, value.__globals__) or not (
                ident(code) in sealed_code or name.startswith("<") or (
                    library_function(value, code) if name in test_files or not under(name, (root,)) else True))
            # (a file's name is only a claim: its source must agree. Of the repository's files outside the package,
            # the test files pytest runs and their conftests are held to what pytest runs of them; any other is
            # taken at its word: see the README's residuals. A test's own function is judged by made_by_tests.)
            judged[ident(value)] = (value, verdict)
            return verdict
        if depth < 2:
            cls = value if issubclass_(t, type_) else t
            for base in mro_of(cls):
                if base is object_ or flags_of(base) & immutable:
                    continue
                for v in list_(dict_of(base).values()):
                    if made(v, depth + 1):
                        return True
        return False

    judged = {}  # id -> (function, verdict) of the functions made() has judged (held, so that ids stay theirs)

    def made_by_tests(value):
        """made(), except that a function naming a file of the repository outside the package is taken at its word:
        a test's function is often a library's wrapper that takes the test's file name (hypothesis's ``@given``
        compiles one from a string and gives it the test's file and line), so a test module of the package's making
        is caught where pytest runs it (the guard's ``exec`` check), not here."""
        unwrapped_value = unwrapped(value)
        if type_(unwrapped_value) is FunctionType:
            name = text_of(unwrapped_value.__code__.co_filename)
            if under(name, (root,)) and not package_code(name, unwrapped_value.__globals__):
                return False
        return made(value)
    recoded = {}  # id -> function whose __code__ was set since the vault opened (entry() fills it)
    # a file outside the repository -> what its source compiles to: {(name, line, bytecode)}, the parent's answers
    # first (read-only files, read before any code under test ran), taken only as exact types
    library_code = {}
    if type_(library) is dict_:
        for path, keys in list_(library.items()):
            if type_(path) is str_type and type_(keys) is frozenset_ and not path.startswith(root + "/"):
                library_code[path] = keys
    compiled_copy = FunctionType(compiled_keys.__code__, {}, "compiled_keys", compiled_keys.__defaults__)
    checked = {}  # id -> (code, verdict) of the functions library_function has judged

    def compiled(name):
        """What the file ``name`` compiles to, as the import system compiles it."""
        found = library_code.get(name)
        if found is None:
            found = library_code[name] = compiled_copy(name)
        return found

    # What pytest runs of each graded test file and each conftest.py on the way to one (``ahead_code``, made before
    # any code under test ran: ``frog_guard.test_code``): a function claiming one of these files is that file's only
    # where its code is among it (or among the import system's compilation of the file). Code of the package's under
    # a test file's name (compiled from a string, planted as bytecode, handed to pytest by a rewrite function swapped
    # in and out, put in the grading server's parent's cache) is none of it.
    # Those files' code is compared by value (frog_guard.code_keys: constants and names too, not only bytecode), with
    # a copy of code_keys that only the vault holds.
    test_files, test_keys, plain_test_keys = set_(), {}, {}
    key_of = FunctionType(code_keys.__code__, {}, "code_keys", code_keys.__defaults__) \
        if type_(code_keys) is FunctionType else None
    if type_(ahead_code) is types.MappingProxyType and key_of is not None:
        for path, keys in list_(ahead_code.items()):
            if type_(path) is str_type and type_(keys) is frozenset_:
                test_keys[path] = keys
                test_files.add(path)

    def test_file_code(name):
        """The keys of what the import system compiles of the test file ``name`` (a test package's __init__.py is
        imported, not rewritten), read once."""
        found = plain_test_keys.get(name)
        if found is None:
            try:
                with open_(name, "rb") as f:
                    found = key_of([compile_(f.read(), name, "exec", 0, True)])
            except (OSError_, ValueError_, SyntaxError_):
                found = frozenset_()
            plain_test_keys[name] = found = found - frozenset_((None,))
        return found
    impersonating = {}  # a library file -> {(name, bytecode)} of what it compiles to

    def impersonates(fn, code):
        """Whether ``fn``, whose code names a test file it is not of, is a library's function made to pass for the
        test it wraps (hypothesis's ``@given`` wrapper takes the test's file name and first line): its globals are
        the namespace of a module loaded from a file outside the repository, and that file's source compiles to a
        function of its name and bytecode."""
        namespace = fn.__globals__
        if type_(namespace) is not dict_:
            return False
        for m in list_(modules.values()):
            if type_(m) is module_type and module_dict(m) is namespace:
                owner = [v for k, v in dict_items(namespace) if type_(k) is str_type and k == "__file__"]
                if not owner or type_(owner[0]) is not str_type or under(owner[0], (root,)):
                    return False
                found = impersonating.get(owner[0])
                if found is None:
                    found = impersonating[owner[0]] = set_((n, c) for n, _, c in compiled(owner[0]))
                return (text_of(code.co_name), bytes_of(code.co_code)) in found
        return False

    def library_function(fn, code):
        """Whether ``fn``, whose code names a file outside the package's source (a library's, or the repository's:
        a test file, a conftest), is that file's own: defined in the namespace of the module loaded from it, with
        code its source compiles to (for a test file or a conftest pytest runs, as pytest compiles it: see
        ``ahead_code``). Code compiled from a string under such a file's name (to pass for that file's: a test's,
        a library's) is neither."""
        hit = checked.get(ident(code))
        if hit is not None and hit[0] is code:
            return hit[1]
        name, namespace, verdict = text_of(code.co_filename), fn.__globals__, False
        if type_(namespace) is dict_:
            for m in list_(modules.values()):
                if type_(m) is not module_type:
                    continue
                d = module_dict(m)
                if d is namespace:
                    owner = [v for k, v in dict_items(d) if type_(k) is str_type and k == "__file__"]
                    verdict = bool_(owner) and type_(owner[0]) is str_type and owner[0] == name
                    if verdict and name in test_files:  # by value: what pytest runs of it, or imports
                        key = list_(key_of((code,), False))[0]
                        verdict = key is not None and (key in test_keys[name] or key in test_file_code(name))
                    elif verdict:
                        key = (text_of(code.co_name), code.co_firstlineno, bytes_of(code.co_code))
                        verdict = key in compiled(name)
                    break
            if not verdict and name in test_files:
                verdict = impersonates(fn, code)
        checked[ident(code)] = (code, verdict)
        return verdict

    def broken_seal(groups, hooks):
        """The first sealed attribute that code the package made has replaced (in the namespaces of ``groups``: see
        :func:`group`), or the first hook (of ``hooks``, None: all) with an implementation the package made or without
        this plugin's own; else None."""
        for entries in groups:
            broken = broken_namespace(entries)
            if broken is not None:
                return broken
        return broken_hook(hooks)

    def broken_namespace(entries):
        entries, every, dicts, proxies, before = entries
        n = len_(every)
        # as last found, compared in place (one C call: the sizes as ints, then every key and value by identity)
        if before and (c_items(every, before[0], before[1]) if c_items is not None else all_(chain_(
                map_(eq_, map_(len_, every), before[0]),
                map_(is_, chain_(from_iterable(every), from_iterable(
                    chain_(map_(dict_values, dicts), map_(proxy_values, proxies)))), before[1])))):
            now = None
        else:
            now = tuple_(chain_(map_(len_, every), from_iterable(every),
                                from_iterable(chain_(map_(dict_values, dicts), map_(proxy_values, proxies)))))
        if now is not None:
            offset, values, as_sealed = n, n + (len_(now) - n >> 1), True
            for (where, d, items, names, objects, was), size in zip_(entries, now[:n]):
                keys, vals = now[offset:offset + size], now[values:values + size]
                offset, values = offset + size, values + size
                if was and len_(keys) == len_(was[0]) and all_(map_(is_, keys, was[0])) and \
                        all_(map_(is_, vals, was[1])):
                    continue
                if not all_(map_(is_, map_(type_, keys), repeat_(str_type))):
                    return f"put a key of its own in {where}"
                get = dict_(zip_(keys, vals)).get
                if all_(map_(is_, map_(get, names), objects)):
                    was[:] = keys, vals
                    continue
                as_sealed = False
                for k, v in items:
                    value = get(k)
                    if value is not v and made(value):
                        return f"replaced {where}.{k}"
            before[:] = (now[:n], now[n:]) if as_sealed else ()
        return None

    def broken_hook(hooks):
        for name, caller, impl, function in state["ours"]:
            impls = field(caller, "_hookimpls", caller_kind, list_)
            if field(impl, "function", impl_kind) is not function or not any_(map_(is_, impls or (), repeat_(impl))):
                return f"replaced the report plugin's {name}"
        if state["pm"] is not None:
            relay = field(state["pm"], "hook", pm_kind)
            if lookup(relay, relay_kind) is None:
                return "replaced pytest's hook relay"
            if hooks is hot_hooks and hooks_as_before(relay):
                return None
            seen = []
            for name, caller in instance_items(relay, relay_kind):
                if hooks is not None and name not in hooks:
                    continue
                impls = field(caller, "_hookimpls", caller_kind, list_)
                if impls is None:
                    return f"replaced pytest's hook {name}"
                for impl in impls:
                    if made(field(impl, "function", impl_kind)):
                        return f"registered a pytest plugin of its own ({name})"
                seen.append((caller, impls))
            if hooks is hot_hooks:
                remember_hooks(relay, seen)
        return None

    # The hot hooks as the last check found them clean: the relay, its instance dictionary's names and values, and
    # for each hot hook its caller, the list of implementations, each implementation's class and function. A check
    # that finds all of these the same objects (compared in C), and no function's __code__ set since (``recoded``
    # empty), would judge the same functions with the same verdicts (made() keeps them), so it stops there. Only
    # where every implementation is pluggy's own class, its function read from its slot, and a plain function
    # (or a method or partial of one: made() keeps no verdict for other callables, whose class may change).
    hot_before = []
    hookimpl_class = pluggy_globals.get("HookImpl")
    impl_function = reader(hookimpl_class)[3].get("function") if type_(hookimpl_class) is type_ else None

    def remember_hooks(relay, seen):
        hot_before.clear()
        d = lookup(relay, relay_kind)[3](relay)
        if impl_function is None or d is None or recoded:
            return
        callers = []
        for caller, impls in seen:
            impls_now = tuple_(impls)
            if not all_(map_(is_, map_(type_, impls_now), repeat_(hookimpl_class))):
                return
            functions = tuple_(map_(impl_function, impls_now, repeat_(hookimpl_class)))
            if not all_(map_(is_, map_(type_, map_(unwrapped, functions)), repeat_(FunctionType))):
                return
            callers.append((caller, type_(caller), impls, impls_now, functions))
        hot_before.append((relay, tuple_(d), tuple_(dict_values(d)), callers))

    def hooks_as_before(relay):
        if not hot_before or recoded:
            return False
        before, names, values, callers = hot_before[0]
        d = lookup(relay, relay_kind)[3](relay) if relay is before else None
        if d is None or len_(d) != len_(names) or not all_(map_(is_, tuple_(d), names)) or \
                not all_(map_(is_, tuple_(dict_values(d)), values)):
            return False
        for caller, caller_type, impls, impls_then, functions in callers:
            if type_(caller) is not caller_type or field(caller, "_hookimpls", caller_kind, list_) is not impls:
                return False
            impls_now = tuple_(impls)
            if len_(impls_now) != len_(impls_then) or not all_(map_(is_, impls_now, impls_then)) or \
                    not all_(map_(is_, map_(type_, impls_now), repeat_(hookimpl_class))) or \
                    not all_(map_(is_, map_(impl_function, impls_now, repeat_(hookimpl_class)), functions)):
                return False
        return True

    def check(what, entries=sealed, hooks=None):
        broken = broken_seal(entries, hooks)
        if broken is not None and not any_(m.startswith(f"code under test {broken} ") for m in flagged):
            flag(f"code under test {broken} (seen {what})")

    def genuine(event, raiser):
        """Whether this event comes from the hook function it belongs to, called by pytest: on the main thread,
        inside the session, no frame of the package's or of code compiled from a string on the way."""
        if get_ident() != main_thread:
            return False
        f = raiser  # the frame below the vault's audit hook (run() hands it over: no second sys._getframe event)
        if f is None or f.f_code is not codes.get(event):
            return False
        f, walked = f.f_back, []
        while f is not None:
            if walked_clean.get(ident(f)) is f:  # this frame's whole way down was walked before, and is unchanged
                break
            code = f.f_code
            if code is wrap_session:
                break
            if cleared.get(ident(code)) is not code:  # held here, so that its id is never another's
                name = text_of(code.co_filename)
                if package_code(name, f.f_globals):
                    return False
                if not name.startswith("<"):  # a file's code is judged by its file alone
                    cleared[ident(code)] = code
            if not code.co_flags & resumable:
                walked.append(f)
            f = f.f_back
        else:
            return False
        for f in walked:
            walked_clean[ident(f)] = f
        return True

    def outcome_of(report):
        """A report's outcome as this plugin records it (``xfail``/``xpass`` for an expected failure), or None."""
        outcome = field(report, "outcome", report_kind, str_type)
        if outcome is not None and field(report, "wasxfail", report_kind) is not None:
            outcome = "xfail" if outcome == "skipped" else "xpass"
        return outcome

    def status(p):  # _status's rule, a copy of its own: the vault calls no function code under test could rewrite
        setup, call, teardown = p.get("setup"), p.get("call"), p.get("teardown")
        if setup == "failed" or teardown == "failed":
            return "ERROR"
        if setup == "skipped" or call == "skipped":
            return "SKIPPED"
        if setup == "xfail" or call == "xfail":
            return "XFAIL"
        if call == "passed" or call == "xpass":
            return "PASSED"
        if call == "failed":
            return "FAILED"
        return "ERROR"

    def refuse(_):
        raise TypeError_("not JSON")

    def dumps(body):
        encode = make_encoder(None, refuse, encode_ascii, None, ":", ",", True, False, True)
        return "".join(encode(body, 0))

    def finish(session, exitstatus, extra):
        check("at the end of the session")
        for m in lying_values():
            flag(m)
        t = times()
        collected = field(session, "testscollected", node_kind, int_type)
        out = {"exitstatus": int_add(exitstatus, 0) if issubclass_(type_(exitstatus), int_type) else -1,
               "tests": {n: status(p) for n, p in dict_items(phases)},
               "collect_errors": list_(collect_errors), "collected": collected or 0,
               "cpu_seconds": round_(t.user + t.system + t.children_user + t.children_system, 3)}
        extra = plain(extra)
        for k in ("details", "modules", "passes"):  # informative only: nothing grading scores
            if type_(extra) is dict_ and k in extra:
                out[k] = extra[k]
        if guard or flagged:
            out["guard"] = list_(flagged)
        # (informative: what ran the walk of the classes and the seal's comparison, the C helper or Python)
        out["vault"] = ("python" if c_walk is None else "c") + ("+python" if c_items is None else "+c")
        text = dumps(out)
        signer = mac.copy()
        signer.update(text.encode())
        out["signature"] = signer.hexdigest()
        tmp = report_path + ".tmp"
        with open_(tmp, "w", encoding="utf-8") as f:
            f.write(dumps(out))
        replace(tmp, report_path)

    def function_of(value):
        """The plain function under a method, partial or property ``value``, or None."""
        value = unwrapped(value)
        return value if type_(value) is FunctionType else None

    def heap_classes():
        """Every class alive that is not a static type (``immutable``: its dictionary is as C made it), each once,
        by a walk of the subclass tree (in C where ``accel`` was taken: see below)."""
        if c_walk is not None:
            return c_walk(object_, immutable)
        heap, seen, todo = [], set_(), [object_]
        add, push, keep = seen.add, todo.append, heap.append
        while todo:
            for cls in subclasses_of(todo.pop()):
                i = ident(cls)
                if i in seen:
                    continue
                add(i)
                push(cls)
                if not flags_of(cls) & immutable:
                    keep(cls)
        return heap

    # The plugin's C helper (``frog_accel.c``: the same walk, and the names compared by identity, without a Python step
    # per class or name), taken only where it gives exactly the classes this walk gives, in the same order (a helper
    # built for another interpreter, or changed, is never used): both are C functions, bound here.
    # Its comparison of the sealed namespaces is taken where it finds every group as this module reads it, and a
    # group one object of whose state differs, different.
    c_walk = c_names = c_items = None
    if type_(accel) is tuple_ and len_(accel) == 3 and all_(type_(f) is type_(len_) for f in accel):
        try:
            ours, theirs = heap_classes(), accel[0](object_, immutable)
            if type_(theirs) is list_ and len_(theirs) == len_(ours) and all_(map_(is_, theirs, ours)) and \
                    accel[1]([*ours], tuple_(map_(tuple_, map_(dict_of, ours)))) is True:
                c_walk, c_names = accel[0], accel[1]
            agrees = True
            for _, every, dicts, proxies, _ in (*sealed, *hot):
                sizes = tuple_(map_(len_, every))
                flat = tuple_(chain_(from_iterable(every),
                                     from_iterable(chain_(map_(dict_values, dicts), map_(proxy_values, proxies)))))
                agrees = agrees and accel[2](every, sizes, flat) is True and \
                    (not flat or accel[2](every, sizes, (object_(), *flat[1:])) is False)
            if agrees:
                c_items = accel[2]
        except BaseException_:  # noqa: BLE001 (the Python comparisons, as without it)
            pass

    fine_before = {}  # id -> function of a file's code that lying_values found fine (held, so that ids stay theirs)
    # those the grading server's parent found, before any code of a package ran, with code of files outside the
    # repository: the verdict lying_values would give them (not the package's) read no state a grade can change
    # but their code, and a __code__ set after the vault opened is marked in ``recoded`` (judged afresh)
    if type_(fine) is tuple_:
        for f in fine:
            if type_(f) is FunctionType:
                fine_before[ident(f)] = f
    # What the last lying_values that found nothing left (one entry, or none): [the heap's class ids in its order, each
    # class's names (a tuple each, in that order), the classes that had a slot's name as (position, class) (held:
    # their ids stay theirs), those classes' values (flat, in that order), the wrappers [6], the callables with their
    # class [7], the classes with their MRO [8] (each below), and how many functions had their __code__ set then]. It is
    # kept only where every name was an exact str and every slot's value was judged by a verdict kept until a
    # function's __code__ is set (``fine_before``, none of them a function whose __code__ was set before). A class
    # without a slot's name is judged by its names alone, so the same names (the same str objects, exact str then)
    # give the same verdict whatever class now has that id; a class with one is held and compared by object, with
    # its values. All of it the same, and no other function's __code__ set since: nothing to find, as then. A
    # generated method's verdict also reads its class's name and its module's file, which the package can change
    # without touching the class; it is kept all the same: what the method does is the function held in the class's
    # values, so a lie that passes while those names are as they were passes a fresh walk in that state too (the
    # package chooses them at every moment). Then, what else those verdicts read, each compared by object:
    # [6] each wrapper a slot holds (a static or class method, property, partial, bound method) with the function
    # it wrapped (``__init__`` and ``__setstate__`` called again change what one wraps, in place); [7] each callable
    # that is no function, which made() found no package's, with its class, and [8] that class with its MRO: what
    # made() read of it is its MRO's dictionaries, which are held with the slots' classes (names and values
    # compared), and :func:`callable_witness` keeps a callable only where every value there is a function, a
    # wrapper of one (put in [6]) or an object of a type whose dictionary and class can't change.
    # Each class's verdict reads that class alone (and, for a callable's class, the classes held with it), so where
    # classes were made or died since, the classes kept are compared as they are, wherever the heap now has them,
    # and only the new ones are examined: the entry then holds both, in the heap's order.
    walked = []

    def callable_witness(value, index, held, wrappers, mros):
        """The class of ``value`` (a callable that is no function) where made() finds it no package's by reading
        nothing that the checks of a kept walk miss, else None: that class, its MRO (kept in ``mros``), each non-static
        base's dictionary (each base once in ``held``: index in the heap -> (class, the values read here), as a slot's
        class is) and in it only functions and wrappers of functions (kept in ``wrappers``) that made() finds no
        package's, and objects of static types whose MRO is static. The verdict is made here, on the very objects
        kept (a thread of the package's may have changed them since made() first read them)."""
        if unwrapped(value) is not value:  # a wrapper of something that is no function
            return None
        t = type_(value)
        if issubclass_(t, type_):  # a class: made() reads its own MRO, two levels down
            return None
        seen = mros.get(ident(t))
        if seen is not None:
            return t if seen[0] is t else None
        mro, bases = mro_of(t), []
        for base in mro:
            if base is object_ or flags_of(base) & immutable:
                continue
            i = index.get(ident(base))
            if i is None:
                return None
            values = tuple_(proxy_values(dict_of(base)))  # (one C call: what is examined is what is kept)
            for x in values:
                tx = type_(x)
                if tx is FunctionType:
                    if recoded.get(ident(x)) is x or made(x, 1):
                        return None
                elif tx is staticmethod_ or tx is classmethod_ or tx is property_ or tx is partial or \
                        tx is MethodType:
                    inner = unwrapped(x)
                    if type_(inner) is not FunctionType or recoded.get(ident(inner)) is inner or made(inner, 1):
                        return None
                    wrappers.append((x, inner))
                elif issubclass_(tx, type_) or not all_(b is object_ or flags_of(b) & immutable for b in mro_of(tx)):
                    return None
            bases.append((i, base, values))
        mros[ident(t)] = (t, mro)
        held.update((i, (base, values)) for i, base, values in bases if i not in held)
        return t

    def examine(heap, at, views, index):
        """Examine the classes at positions ``at`` of ``heap`` (``views``: their namespaces, in that order). Every
        class's names are read in one C call; then the names and values of those with a slot's name (or a name that
        is no exact str) in another (no thread of the package's can change one between its names and its values;
        one whose names changed between the two reads is judged by the second, and the walk is not kept). The values
        of the other classes are never read: a class without a slot's name holds nothing to judge, and reading every
        value would touch (and, in a grading server's child, copy) the pages of objects no verdict needs. Returns
        (findings, the classes' names (a tuple each), the state a kept walk compares, or None where the verdicts
        are not all kept): the state is (held: {position: (class, values as examined)}, wrappers, typed, mros)."""
        k = len_(at)
        first_read = tuple_(map_(tuple_, views))
        exact = all_(map_(is_, map_(type_, from_iterable(first_read)), repeat_(str_type)))
        if exact:  # (exact str names: hashed in C, no code of the package's runs)
            found = list_(compress(range_(k), map_(not_, map_(slots.isdisjoint, first_read))))
        else:
            found = [j for j, own in enumerate_(first_read)
                     if not all_(map_(is_, map_(type_, own), repeat_(str_type))) or not slots.isdisjoint(own)]
        found_views = list_(map_(getitem_, repeat_(views), found))
        m = len_(found)
        snap = tuple_(chain_(map_(tuple_, found_views), map_(tuple_, map_(proxy_values, found_views))))
        read = tuple_(zip_(found, snap[:m], snap[m:]))  # (position in at, names, values) as judged, read together
        first_names = list_(map_(getitem_, repeat_(first_read), found))
        same = all_(chain_(map_(eq_, map_(len_, snap[:m]), map_(len_, first_names)),
                           map_(is_, from_iterable(snap[:m]), from_iterable(first_names))))
        files, loaded = {}, []

        def file_of(module):  # a module's __file__ (str), looked up only for a generated method of changed code
            if module not in files:  # (exact str keys only, here and in the index: no hash of the package's runs)
                if not loaded:  # the modules loaded now, by exact str name, taken once per call
                    loaded.append({name: m for name, m in list_(dict_items(modules))
                                   if type_(name) is str_type and type_(m) is module_type})
                m, found = loaded[0].get(module), None
                if m is not None:  # that module's dictionary alone, item by item
                    for key, v in dict_items(module_dict(m)):
                        if type_(key) is str_type and key == "__file__":
                            found = v if type_(v) is str_type else None
                files[module] = found
            return files[module]

        prefix, out, kept = root + "/", [], exact and same  # kept: every verdict below is one fine_before keeps
        # the classes whose values a kept walk compares (position in the heap -> (class, values as examined))
        held = {at[j]: (heap[at[j]], own_values) for j, _, own_values in read}
        wrappers, typed, mros = [], [], {}
        for j, own_names, own_values in read:
            cls, hits = heap[at[j]], []
            for name, v in zip_(own_names, own_values):
                if type_(name) is str_type and name in slots and ident(type_(v)) not in c_kinds:
                    f = function_of(v)
                    if f is None:  # made() keeps its verdict on other callables only as callable_witness says
                        if made(v):
                            hits.append((name, None))
                        elif kept:
                            if index[0] is None:
                                index[0] = dict_(zip_(map_(ident, heap), range_(len_(heap))))
                            t = callable_witness(v, index[0], held, wrappers, mros)
                            if t is None:
                                kept = False
                            else:
                                typed.append((v, t))
                    else:
                        if type_(v) is not FunctionType:
                            wrappers.append((v, f))
                        hits.append((name, f))
            if not hits:
                continue
            cq = qualname_of(cls)
            cq = cq if type_(cq) is str_type else None
            for name, f in hits:
                if f is None:  # a callable object the package made
                    out.append(f"code under test gave {cq or 'a class'} a {name} that is no function")
                    continue
                # a function found fine before, its __code__ not set since, is fine again: the verdict below
                # reads its code and globals alone (read-only) where the code is a file's, or code of no file run in
                # a namespace loaded before the vault (a dataclass's methods in pytest's modules: not the
                # package's, whatever class holds them), as made() keeps its own (a generated method of the
                # package's reads its class's module and name, which may change: read afresh)
                if fine_before.get(ident(f)) is f and recoded.get(ident(f)) is not f:
                    continue
                if recoded.get(ident(f)) is f:  # its __code__ set since the vault opened: may be set again
                    kept = False
                code = f.__code__
                where = text_of(code.co_filename)  # a str subclass naming the changed file is that file
                if not package_code(where, f.__globals__):
                    fine_before[ident(f)] = f
                    continue
                generated = where.startswith("<")
                if generated:  # a dataclass's or attrs' method: its class's module's (read afresh each full walk)
                    mod = [v for key, v in zip_(own_names, own_values) if type_(key) is str_type and key == "__module__"]
                    where = file_of(mod[0]) if mod and type_(mod[0]) is str_type else None
                    if where is None:  # no loaded module's (attrs' tests make classes of made-up modules)
                        continue
                rel = where[len_(prefix):] if where.startswith(prefix) else None
                own = changed.get(rel) if rel is not None else None
                if own is None:  # the repository's own file, as it stands: not the agent's
                    if not generated:
                        fine_before[ident(f)] = f
                    continue
                qual = qual_of(code) if qual_of is not None else code.co_name  # 3.10: no co_qualname
                qual = qual if type_(qual) is str_type else ""
                # generated: for a class the file defines there. Else a function the file defines there: the
                # repository's own code, whatever class it is put on (attrs' factories make __ge__ in
                # _make_order, and cmp_using's methods in _make_operator, for classes made at run time)
                fine = cq is not None and cq in own if generated else qual in own
                if fine and not generated:
                    fine_before[ident(f)] = f
                if not fine:
                    kept = False
                    out.append(f"code under test gave {cq or 'a class'} a {name} that {rel} does not define "
                               f"there ({qual or 'no name'}): a value that compares as it likes")
        return out, first_read, ((held, wrappers, typed, mros) if kept and not out else None)

    def lying_values():
        """Each class alive now that holds, as a comparison or format method (:data:`_BEHAVIOUR_SLOTS`), code
        that the package's changed files made and that the repository's own version of the file does not put
        there (a value that equals anything passes any assertion): one finding each, else []. Read by exact
        types and C descriptors only; a generated method (``<...>``, as dataclasses and attrs make) counts as
        its class's module's, by the module's file (:func:`examine`). Where the last walk's entry (``walked``) holds for
        the classes it kept, only the classes made since are examined."""
        if not changed:
            return []
        heap = heap_classes()
        n = len_(heap)
        # the classes' namespaces (read where examined, and by the Python comparison of names; the C one reads the
        # classes themselves)
        views = list_(map_(dict_of, heap)) if c_names is None else None
        ids = tuple_(map_(ident, heap))
        index = [None]  # the heap's positions by class id, made once per call where needed
        kept_then = None  # (where the heap has the kept classes now, their names, their held entries' places, the entry)
        if walked and len_(recoded) == walked[7]:
            then, names, held, values, wrappers, typed, mros, _ = walked
            if ids == then:  # (ints, compared in C) the very classes, in the same order
                where, now, held_at = None, heap if views is None else views, tuple_(map_(first, held))
            else:  # classes made or gone since: each kept one compared where the heap has it now
                index[0] = dict_(zip_(ids, range_(n)))
                where = tuple_(map_(index[0].get, then))
                alive = tuple_(map_(is_not, where, repeat_(None)))
                if not all_(alive):
                    where, names = tuple_(compress(where, alive)), tuple_(compress(names, alive))
                now = list_(map_(getitem_, repeat_(heap if views is None else views), where))
                held_at = tuple_(map_(index[0].get, map_(ident, map_(second, held))))  # (held: alive, ids theirs)
            if None not in held_at and (c_names(now, names) if c_names is not None else all_(chain_(
                    map_(eq_, map_(len_, now), map_(len_, names)),
                    map_(is_, from_iterable(now), from_iterable(names))))) and all_(chain_(
                    map_(is_, map_(getitem_, repeat_(heap), held_at), map_(second, held)),
                    map_(is_, from_iterable(map_(proxy_values, map_(dict_of, map_(second, held)))), values),
                    map_(is_, map_(unwrapped, map_(first, wrappers)), map_(second, wrappers)),
                    map_(is_, map_(type_, map_(first, typed)), map_(second, typed)),
                    map_(is_, map_(mro_of, map_(first, mros)), map_(second, mros)))):
                if where is None:
                    return []
                kept_then = where, names, held_at, walked[:]
        if kept_then is None:  # every class examined
            at = range_(n)
            out, names_of, kept = examine(heap, at, views if views is not None else list_(map_(dict_of, heap)), index)
        else:  # only those the heap did not have then
            at = tuple_(sorted_(frozenset_(range_(n)) - frozenset_(kept_then[0])))
            out, names_of, kept = examine(heap, at, list_(map_(dict_of, map_(getitem_, repeat_(heap), at))), index)
        walked.clear()
        if out or kept is None:
            return out
        held, wrappers, typed, mros = kept
        held_now = tuple_((i, cls) for i, (cls, _) in dict_items(held))
        values_now = tuple_(from_iterable(values for _, values in dict_values(held)))
        if kept_then is None:
            names, mros = names_of, tuple_(dict_values(mros))
        else:  # the kept classes' entries and the new ones', each class at its place in the heap
            where, old_names, held_at, (_, _, old_held, old_values, old_wrappers, old_typed, old_mros, _) = kept_then
            place = dict_(zip_(where, old_names))
            place.update(zip_(at, names_of))
            names = tuple_(map_(place.__getitem__, range_(n)))
            held_now = tuple_(chain_(zip_(held_at, map_(second, old_held)), held_now))
            values_now = tuple_(chain_(old_values, values_now))
            wrappers, typed = [*old_wrappers, *wrappers], [*old_typed, *typed]
            mros = tuple_(chain_(old_mros, dict_values(mros)))
        walked[:] = (ids, names, held_now, values_now, tuple_(wrappers), tuple_(typed), mros, len_(recoded))
        return out

    def package_class(cls):
        """Whether a test item's class has a function of the package's own making in its MRO's dictionaries (its
        source, or a string compiled in a namespace that no module loaded before the vault owns). A plugin's
        item class (pytest-asyncio's, loaded after the vault on the cold path) is a library's, whatever its
        functions' code looks like next to their file."""
        for base in mro_of(cls):
            if base is object_:
                continue
            for v in list_(dict_of(base).values()):
                f = function_of(v)
                if f is not None and package_code(text_of(f.__code__.co_filename), f.__globals__):
                    return True
        return False

    def test_function_replaced(item):
        """What of ``item`` (a test pytest is about to call) code the package made has replaced, or None: the
        test's function (``item.obj``), its ``runtest``, its class, the function or method its parent holds."""
        t = type_(item)  # pytest's own item classes are sealed; any other is read whole
        if not any_(t is c for c in pytest_items) and package_class(t):
            return "its class"
        if field(item, "runtest", item_kind) is not None:
            return "its runtest"
        if made_by_tests(field(item, "_obj", item_kind)):
            return "its function"
        parent = field(item, "parent", item_kind)
        holder = field(parent, "_obj", node_kind)
        name = field(item, "originalname", item_kind, str_type) or field(item, "name", item_kind, str_type)
        if holder is not None and name is not None:
            if type_(holder) is module_type:  # a test module: its namespace, item by item
                found = [v for k, v in dict_items(module_dict(holder)) if type_(k) is str_type and k == name]
            elif issubclass_(type_(holder), type_):  # a test class: its MRO's dictionaries
                found = [v for base in mro_of(holder) for k, v in dict_of(base).items()
                         if type_(k) is str_type and k == name][:1]
            else:
                found = []
            if any_(made_by_tests(v) for v in found):
                return "its definition"
        return None

    def body(event, args, raiser):
        if not event.startswith("frog.vault."):
            if event == "object.__setattr__":  # __code__, __defaults__ of one of this plugin's functions
                flag(f"code under test rewrote the report plugin's {args[0].__name__}.{args[1]}")
            return
        event = event[11:]
        if event == "flag":  # anyone may add a finding: it can only cost the run its grade
            if args and type_(args[0]) is str_type:
                flag(args[0])
            return
        if event == "open":
            if state["opened"]:
                flag("code under test opened a second report vault")
            state["opened"] = True
            return
        try:
            # a "made" event only ever adds a suspicion (below): it needs no walk of the stack
            if len_(args) != arity.get(event, -1) or event != "made" and not genuine(event, raiser):
                flag(f"code under test handed the report plugin's {event} event something pytest did not")
                check(f"at the {event} event pytest did not raise")  # and name what it replaced, if it did
                return
            if event == "configure":
                pm = field(args[0], "pluginmanager", config_kind)
                relay = field(pm, "hook", pm_kind)
                if lookup(relay, relay_kind) is None:
                    flag("code under test replaced pytest's plugin manager before it was configured")
                    return
                state["pm"] = pm
                for name, caller in instance_items(relay, relay_kind):
                    function = hooks_of.get(name)
                    for impl in field(caller, "_hookimpls", caller_kind, list_) or ():
                        if function is not None and field(impl, "function", impl_kind) is function \
                                and field(impl, "plugin", impl_kind) is me:
                            state["ours"].append((name, caller, impl, function))
            elif event == "start":
                nodeid = args[0]
                if type_(nodeid) is not str_type or state["current"] is not None or nodeid in phases:
                    flag(f"code under test started {nodeid if type_(nodeid) is str_type else 'a test'} out of "
                         "pytest's order")
                    return
                state["current"] = nodeid
                phases[nodeid] = {}
                # the earlier tests' frames go; those this event runs on (pytest's loop and session, this test's
                # protocol) stay, as walked: a running function's callers are fixed (reading f_back raises no event)
                below, f = {}, raiser
                while f is not None:
                    if walked_clean.get(ident(f)) is f:
                        below[ident(f)] = f
                    f = f.f_back
                walked_clean.clear()
                walked_clean.update(below)
            elif event == "call":
                item = args[0]
                nodeid = field(item, "_nodeid", node_kind, str_type)
                if nodeid is None or nodeid != state["current"]:
                    flag(f"code under test ran a test while pytest ran {state['current']}")
                    return
                what = test_function_replaced(item)
                if what is not None:
                    flag(f"code under test replaced the test function of {nodeid} ({what})")
            elif event == "made":
                nodeid = field(args[0], "_nodeid", node_kind, str_type)
                if nodeid is None or nodeid != state["current"]:
                    flag(f"code under test made a report while pytest ran {state['current']}")
                    return
                # an exception the phase raised (None: it returned); a report made from it never says passed. Until
                # the phase's report comes, a raise once said stays said (whoever else raises this event)
                when, before = field(args[1], "when", call_kind, str_type), state["made"]
                raised = field(args[1], "excinfo", call_kind) is not None
                if before is not None and before[0] == nodeid and before[1] == when:
                    raised = raised or before[2]
                state["made"] = (nodeid, when, raised)
            elif event == "record":
                report = args[0]
                nodeid = field(report, "nodeid", report_kind, str_type)
                when = field(report, "when", report_kind, str_type)
                outcome = outcome_of(report)
                if nodeid is None or when is None or outcome is None:
                    flag("code under test handed the report plugin a report that is not pytest's")
                    return
                if nodeid != state["current"]:
                    flag(f"code under test reported {nodeid} while pytest ran {state['current']}")
                    return
                if when == "call" or outcome == "failed":
                    if nodeid.split("[", 1)[0] in canaries:
                        check(f"at the report of {nodeid}")
                    elif nodeid.split("::", 1)[0] in graded_files:
                        check(f"at the report of {nodeid}", hot, hot_hooks)
                made, state["made"] = state["made"], None
                if outcome == "passed" and made is not None and made[0] == nodeid and made[1] == when and made[2]:
                    flag(f"code under test turned the {when} of {nodeid}, which raised, into a pass after pytest "
                         "made its report")
                if when == "call" and outcome == "passed" and nodeid in f2p:
                    for m in lying_values():
                        flag(m)
                p = phases[nodeid]
                before = p.get(when)
                # a phase reported twice (subtests) keeps the worse: a later pass never hides a failure
                p[when] = "failed" if "failed" in (before, outcome) else before or outcome
            elif event == "end":
                if type_(args[0]) is not str_type or state["current"] != args[0]:
                    flag(f"code under test ended a test while pytest ran {state['current']}")
                state["current"] = None
            elif event == "collect_error":
                nodeid = field(args[0], "nodeid", report_kind, str_type)
                collect_errors.append(nodeid if nodeid is not None else "<not pytest's report>")
            elif event == "finish":
                if state["finished"]:
                    flag("code under test ended the session twice")
                state["finished"] = True
                finish(args[0], args[1], args[2])
        except BaseException_ as e:  # noqa: BLE001 (the run must not look clean because the vault failed)
            flag(f"the report vault failed at {event}: {type_(e).__name__}")
            if event == "finish":
                raise

    # The vault's state (the key among it) is reachable from every frame of the vault's own code, so no code of
    # the package may run while one is on the stack: not a signal handler (Python runs them between any two
    # instructions of the main thread), not a finaliser of the garbage collector, not an audit hook of its own
    # (the vault raises audit events itself). The hook that pytest's events reach (``entry``) holds nothing worth
    # reading: it swaps every Python signal handler for one that only notes the signal, turns off the collector,
    # and only then resumes the generator below, whose suspended frame is the one way to the rest (its
    # ``gi_frame`` is refused); the noted signals are raised again once the vault's frames are gone.
    def run():
        error = None
        while True:
            try:
                event, args = yield error
            except GeneratorExit_:
                return
            except BaseException_:  # noqa: BLE001 (thrown in: never let out, its traceback would carry this frame)
                error = "a signal thrown into the vault"
                continue
            error = None
            f = getframe(1)
            if f is None or f.f_code is not entry_code:
                flag("code under test called into the report vault directly")
                continue
            try:
                body(event, args, f.f_back)
            except BaseException_ as e:  # noqa: BLE001 (raised again by entry, without this frame)
                error = type_(e).__name__

    pending = []

    def deferred(signum, frame):
        pending.append(signum)

    gen = run()
    next(gen)
    signals = tuple_(sorted(s for s in _signal.valid_signals() if s not in (_signal.SIGKILL, _signal.SIGSTOP)))
    # every signal's handler as now, where none is a Python handler to swap (the usual case: pytest installs none):
    # an event that finds each the very same object swaps none, in one C call instead of a Python loop
    quiet = tuple_(map_(_signal.getsignal, signals))
    if not all_(h is None or h is _signal.SIG_DFL or h is _signal.SIG_IGN or h is _signal.default_int_handler
                for h in quiet):
        quiet = (object_(),) * len_(signals)  # never the same: every event reads each handler

    # (the C module's functions: the signal module's wrappers convert to enums, fifty times slower)
    def entry(event, args, _send=gen.send, _gen=gen, _prefix="frog.vault.", _functions=functions,
              _getsignal=_signal.getsignal, _set=_signal.signal, _raise=_signal.raise_signal, _signals=signals,
              _dfl=_signal.SIG_DFL, _ign=_signal.SIG_IGN, _int=_signal.default_int_handler, _deferred=deferred,
              _pending=pending, _isenabled=gc.isenabled, _disable=gc.disable, _enable=gc.enable,
              _ident=get_ident, _main=main_thread, _RuntimeError=RuntimeError, _id=ident, _recoded=recoded,
              _len=len_, _type=type_, _str=str_type, _quiet=quiet, _all=all_, _map=map_, _is=is_):
        refused = None
        if not event.startswith(_prefix):
            if event == "object.__getattr__" and args and args[0] is _gen:
                refused = event, args = "frog.vault.flag", ("code under test looked into the report vault",)
            elif event != "object.__setattr__" or not args:
                return
            else:
                if _len(args) > 1 and _type(args[1]) is _str and args[1] == "__code__":
                    _recoded[_id(args[0])] = args[0]  # (before the new code is in place: see made())
                if _id(args[0]) not in _functions:
                    return
        swapped = []
        if _ident() == _main and not _all(_map(_is, _map(_getsignal, _signals), _quiet)):
            for s in _signals:
                h = _getsignal(s)
                if h is not None and h is not _dfl and h is not _ign and h is not _int:
                    _set(s, _deferred)
                    swapped.append((s, h))
        collecting = _isenabled()
        _disable()
        try:
            error = _send((event, args))
        finally:
            if collecting:
                _enable()
            for s, h in swapped:
                _set(s, h)
            while _pending:
                _raise(_pending.pop(0))
        if refused is not None:
            raise _RuntimeError("the report vault is not for code under test")
        if error is not None:
            raise _RuntimeError(f"the report vault failed at {event}: {error}")

    entry_code = entry.__code__
    # last: nothing above may run code of the package; the key is never a Python object (a bytearray, wiped)
    key = read_exactly(key_fifo, 64)
    key_fifo.close()
    mac = hmac_new(key, digestmod="sha256")
    key[:] = b"\0" * 64
    del key
    sys.addaudithook(entry)
    audit("frog.vault.open")
