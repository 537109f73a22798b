#!/usr/bin/env python3
"""cidquery.py — CallerID from Python through ctypes and libcallerid.so.

Usage:
    python3 cidquery.py [--lib PATH] DB info
    python3 cidquery.py [--lib PATH] DB lookup NUMBER...      ("+7 913 123-45-67" forms accepted)
    python3 cidquery.py [--lib PATH] DB batch NUMBER...
    python3 cidquery.py [--lib PATH] DB dump [--from N] [--action identify|block]
                                             [--category NAME]... [--limit K]
    python3 cidquery.py [--lib PATH] DB merge DB2... [same options as dump]

The library is found with --lib, else $CALLERID_LIB, else ctypes.util.find_library("callerid").
Output lines are those of examples/c/cidquery.c:
    found<TAB>NUMBER<TAB>LABEL<TAB>CATEGORY<TAB>ACTION      not-found<TAB>NUMBER
    NUMBER<TAB>LABEL<TAB>CATEGORY[<TAB>SOURCE]              (dump, merge)
Errors: "error: STATUS-NAME: MESSAGE" on stderr, exit 66 missing file, 65 damaged file,
64 usage, 69 the library cannot be loaded ("error: library: …"), 1 other.
"""
import ctypes
import ctypes.util
import os
import sys

CID_OK, CID_NOT_FOUND, CID_END, CID_TRUNCATED = 0, 1, 2, 3
CID_ERR_FILE_NOT_FOUND, CID_ERR_CORRUPT, CID_ERR_UNSUPPORTED_VERSION = -3, -5, -6
CID_ANY_ACTION, CID_ACTION_IDENTIFY, CID_ACTION_BLOCK = -1, 0, 1
CID_OPEN_VERIFY, CID_OPEN_COPY = 1, 2


class cid_entry(ctypes.Structure):
    _fields_ = [
        ("number", ctypes.c_uint64),
        ("label", ctypes.c_void_p),          # UTF-8, not NUL-terminated: read label_len bytes
        ("label_len", ctypes.c_size_t),
        ("category", ctypes.c_char_p),
        ("category_index", ctypes.c_uint32),
        ("action", ctypes.c_uint32),
        ("source", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
    ]

    @property
    def label_text(self):
        return ctypes.string_at(self.label, self.label_len).decode("utf-8") if self.label else ""


class cid_filter(ctypes.Structure):
    _fields_ = [
        ("action", ctypes.c_int32),
        ("category_count", ctypes.c_uint32),
        ("categories", ctypes.POINTER(ctypes.c_char_p)),
    ]


class CallerIDError(Exception):
    def __init__(self, status, name, message):
        super().__init__(f"{name}: {message}")
        self.status, self.name, self.message = status, name, message


def load_library(path=None):
    path = path or os.environ.get("CALLERID_LIB") or ctypes.util.find_library("callerid")
    if not path:
        raise OSError("libcallerid.so not found: pass --lib PATH or set CALLERID_LIB")
    lib = ctypes.CDLL(path)  # OSError when the file is missing or not a loadable library
    P = ctypes.POINTER
    db_p, cursor_p = ctypes.c_void_p, ctypes.c_void_p
    sigs = {
        "cid_status_name": (ctypes.c_char_p, [ctypes.c_int]),
        "cid_last_error_message": (ctypes.c_char_p, []),
        "cid_version": (ctypes.c_char_p, []),
        "cid_format_version": (ctypes.c_char_p, []),
        "cid_parse_number": (ctypes.c_int, [ctypes.c_char_p, P(ctypes.c_uint64)]),
        "cid_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint32, P(db_p)]),
        "cid_close": (ctypes.c_int, [db_p]),
        "cid_verify": (ctypes.c_int, [db_p]),
        "cid_count": (ctypes.c_int, [db_p, P(ctypes.c_uint64)]),
        "cid_category_count": (ctypes.c_int, [db_p, P(ctypes.c_uint32)]),
        "cid_category": (ctypes.c_int, [db_p, ctypes.c_uint32, P(ctypes.c_char_p), P(ctypes.c_uint32)]),
        "cid_lookup": (ctypes.c_int, [db_p, ctypes.c_uint64, P(cid_entry)]),
        "cid_lookup_batch": (ctypes.c_int, [db_p, P(ctypes.c_uint64), ctypes.c_size_t, P(cid_entry), P(ctypes.c_size_t)]),
        "cid_cursor_open": (ctypes.c_int, [db_p, ctypes.c_uint64, P(cid_filter), P(cursor_p)]),
        "cid_cursor_open_merged": (ctypes.c_int, [P(db_p), ctypes.c_size_t, ctypes.c_uint64, P(cid_filter), P(cursor_p)]),
        "cid_cursor_next": (ctypes.c_int, [cursor_p, P(cid_entry)]),
        "cid_cursor_free": (ctypes.c_int, [cursor_p]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


class Database:
    """An open database; use as a context manager. Labels are copied into Python strings."""

    def __init__(self, lib, path, verify=False):
        self.lib = lib
        self.handle = ctypes.c_void_p()
        self._check(lib.cid_open(os.fsencode(path), CID_OPEN_VERIFY if verify else 0, ctypes.byref(self.handle)))

    def _check(self, status):
        if status < 0:
            raise CallerIDError(status, self.lib.cid_status_name(status).decode(),
                                self.lib.cid_last_error_message().decode("utf-8", "replace"))
        return status

    def close(self):
        if self.handle:
            self.lib.cid_close(self.handle)
            self.handle = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def parse(self, text):
        n = ctypes.c_uint64()
        self._check(self.lib.cid_parse_number(text.encode(), ctypes.byref(n)))
        return n.value

    def lookup(self, number):
        """(label, category, action) or None."""
        e = cid_entry()
        if self._check(self.lib.cid_lookup(self.handle, number, ctypes.byref(e))) == CID_NOT_FOUND:
            return None
        return e.label_text, e.category.decode(), "block" if e.action == CID_ACTION_BLOCK else "identify"

    def lookup_batch(self, numbers):
        n = len(numbers)
        keys = (ctypes.c_uint64 * n)(*numbers)
        results = (cid_entry * n)()
        found = ctypes.c_size_t()
        self._check(self.lib.cid_lookup_batch(self.handle, keys, n, results, ctypes.byref(found)))
        return [(r.number, (r.label_text, r.category.decode(), "block" if r.action else "identify") if r.category else None)
                for r in results], found.value

    def info(self):
        count, ncat = ctypes.c_uint64(), ctypes.c_uint32()
        self._check(self.lib.cid_count(self.handle, ctypes.byref(count)))
        self._check(self.lib.cid_category_count(self.handle, ctypes.byref(ncat)))
        cats = []
        for i in range(ncat.value):
            name, action = ctypes.c_char_p(), ctypes.c_uint32()
            self._check(self.lib.cid_category(self.handle, i, ctypes.byref(name), ctypes.byref(action)))
            cats.append((name.value.decode(), "block" if action.value else "identify"))
        return count.value, cats

    def entries(self, start=0, action=None, categories=(), others=()):
        """Yields (number, label, category, source) in ascending order; `others` merges more databases
        (earlier wins on equal numbers)."""
        names = [c.encode() for c in categories]
        f = cid_filter(CID_ANY_ACTION if action is None else action, len(names),
                       (ctypes.c_char_p * max(len(names), 1))(*names))
        use_filter = ctypes.byref(f) if (action is not None or names) else None
        cursor = ctypes.c_void_p()
        if others:
            dbs = (ctypes.c_void_p * (1 + len(others)))(self.handle, *[o.handle for o in others])
            self._check(self.lib.cid_cursor_open_merged(dbs, len(dbs), start, use_filter, ctypes.byref(cursor)))
        else:
            self._check(self.lib.cid_cursor_open(self.handle, start, use_filter, ctypes.byref(cursor)))
        try:
            e = cid_entry()
            while self._check(self.lib.cid_cursor_next(cursor, ctypes.byref(e))) == CID_OK:
                # The label is valid only until the next call: copy it now.
                yield e.number, e.label_text, e.category.decode(), e.source
        finally:
            self.lib.cid_cursor_free(cursor)


def main(argv):
    lib_path = None
    if len(argv) >= 2 and argv[0] == "--lib":
        lib_path, argv = argv[1], argv[2:]
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 64
    try:
        lib = load_library(lib_path)
    except (OSError, AttributeError) as e:  # AttributeError: a library without the cid_ symbols
        print(f"error: library: {e}", file=sys.stderr)
        return 69
    path, command, args = argv[0], argv[1], argv[2:]
    opened = []
    try:
        db = Database(lib, path)
        opened.append(db)
        if command == "info":
            count, cats = db.info()
            print(f"version\t{lib.cid_version().decode()}\nformat\t{lib.cid_format_version().decode()}\nentries\t{count}")
            for i, (name, action) in enumerate(cats):
                print(f"category\t{i}\t{name}\t{action}")
        elif command in ("lookup", "batch"):
            def show(n, r):
                print(f"found\t{n}\t{r[0]}\t{r[1]}\t{r[2]}" if r else f"not-found\t{n}")
            numbers = []
            for text in args:
                try:
                    numbers.append(db.parse(text))
                except CallerIDError as e:
                    if command == "lookup":  # batch skips unparsable numbers, like cidquery.c
                        print(f"invalid\t{text}\t{e.message}")
                    continue
                if command == "lookup":
                    show(numbers[-1], db.lookup(numbers[-1]))
            if command == "batch":
                results, found = db.lookup_batch(numbers)
                for n, r in results:
                    show(n, r)
                print(f"batch\t{found} of {len(numbers)} found")
        elif command in ("dump", "merge"):
            start, action, cats, limit, rest = 0, None, [], -1, []
            i = 0
            while i < len(args):
                a = args[i]
                if a in ("--from", "--action", "--category", "--limit") and i + 1 == len(args):
                    print(f"error: usage: {a} needs a value", file=sys.stderr)
                    return 64
                if a == "--from": start = db.parse(args[i + 1]); i += 2
                elif a == "--action":
                    if args[i + 1] not in ("identify", "block"):
                        print("error: usage: --action must be identify or block", file=sys.stderr)
                        return 64
                    action = {"identify": 0, "block": 1}[args[i + 1]]; i += 2
                elif a == "--category": cats.append(args[i + 1]); i += 2
                elif a == "--limit":
                    if not args[i + 1].isdigit():
                        print("error: usage: --limit must be a number", file=sys.stderr)
                        return 64
                    limit = int(args[i + 1]); i += 2
                else: rest.append(a); i += 1
            others = [Database(lib, p) for p in rest] if command == "merge" else []
            opened.extend(others)
            for k, (number, label, category, source) in enumerate(db.entries(start, action, cats, others)):
                if k == limit:
                    break
                print(f"{number}\t{label}\t{category}" + (f"\t{source}" if command == "merge" else ""))
        else:
            print(__doc__, file=sys.stderr)
            return 64
        return 0
    except CallerIDError as e:
        print(f"error: {e.name}: {e.message}", file=sys.stderr)
        return {CID_ERR_FILE_NOT_FOUND: 66, CID_ERR_CORRUPT: 65, CID_ERR_UNSUPPORTED_VERSION: 65}.get(e.status, 1)
    finally:
        for d in opened:
            d.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
