/* The report vault's hottest reads, in C: the walk of the subclass tree and the comparison of every class's names with
 * a walk kept from before (frog_vault.py, lying_values), and the comparison of the sealed namespaces with the state
 * the last check found (broken_namespace). They read type objects and dictionaries only, with the GIL held, and
 * call no Python code: no hash, comparison or method of any object runs (identity by address), so a package
 * under test has nothing of its own to run inside them. Optional: setup.py builds it where a C compiler is found,
 * and the vault uses it only where it answers exactly as the vault's own Python does (checked when the vault opens);
 * else the vault does the same in Python.
 *
 * Loaded by frog_report.py from the file next to it, never through sys.path; multi-phase initialisation, so the
 * loader puts it in no sys.modules. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX >= 0x030C0000
#error "frog_accel reads tp_subclasses as Python 3.10 and 3.11 keep it (a dict of weak references)"
#endif

/* A set of object addresses (open addressing, linear probing). */
typedef struct {
    PyObject **slots;
    Py_ssize_t mask, n;
} ptrset;

static int ptrset_init(ptrset *s, Py_ssize_t capacity) {
    s->slots = PyMem_Calloc((size_t)capacity, sizeof(PyObject *));
    s->mask = capacity - 1;
    s->n = 0;
    return s->slots ? 0 : -1;
}

static int ptrset_add(ptrset *s, PyObject *p);

static int ptrset_grow(ptrset *s) {
    ptrset bigger;
    if (ptrset_init(&bigger, (s->mask + 1) * 2) < 0) return -1;
    for (Py_ssize_t i = 0; i <= s->mask; i++) {
        if (s->slots[i] != NULL && ptrset_add(&bigger, s->slots[i]) < 0) {
            PyMem_Free(bigger.slots);
            return -1;
        }
    }
    PyMem_Free(s->slots);
    *s = bigger;
    return 0;
}

/* 1: added, 0: there already, -1: out of memory */
static int ptrset_add(ptrset *s, PyObject *p) {
    if ((s->n + 1) * 2 > s->mask + 1 && ptrset_grow(s) < 0) return -1;
    size_t i = (((size_t)p >> 4) * (size_t)0x9E3779B97F4A7C15ULL) & (size_t)s->mask;
    for (;; i = (i + 1) & (size_t)s->mask) {
        if (s->slots[i] == p) return 0;
        if (s->slots[i] == NULL) {
            s->slots[i] = p;
            s->n++;
            return 1;
        }
    }
}

PyDoc_STRVAR(heap_classes_doc,
"heap_classes(root, static_flag) -> list\n\n"
"Every class reachable from root through the subclass tree, each once, without those whose flags have\n"
"static_flag set: the classes and the order of frog_vault's Python walk (a stack, each class's subclasses in\n"
"the order type.__subclasses__ gives them).");

static PyObject *heap_classes(PyObject *module, PyObject *args) {
    PyObject *root;
    unsigned long static_flag;
    if (!PyArg_ParseTuple(args, "O!k:heap_classes", &PyType_Type, &root, &static_flag)) return NULL;
    ptrset seen = {NULL, 0, 0};
    Py_ssize_t capacity = 256, top = 0;
    PyObject **stack = PyMem_Malloc((size_t)capacity * sizeof(PyObject *));
    PyObject *heap = PyList_New(0);
    if (stack == NULL || heap == NULL || ptrset_init(&seen, 4096) < 0) {
        PyErr_NoMemory();
        goto error;
    }
    stack[top++] = root;
    while (top) {
        PyObject *subclasses = ((PyTypeObject *)stack[--top])->tp_subclasses;
        if (subclasses == NULL) continue;
        if (!PyDict_CheckExact(subclasses)) {
            PyErr_SetString(PyExc_TypeError, "a type's subclasses are not kept as a dict");
            goto error;
        }
        Py_ssize_t pos = 0;
        PyObject *key, *ref;
        while (PyDict_Next(subclasses, &pos, &key, &ref)) {
            if (!PyWeakref_Check(ref)) continue;
            PyObject *cls = PyWeakref_GET_OBJECT(ref);  /* (Py_None once the class is gone) */
            if (!PyType_Check(cls)) continue;
            int added = ptrset_add(&seen, cls);
            if (added < 0) {
                PyErr_NoMemory();
                goto error;
            }
            if (!added) continue;
            if (top == capacity) {
                PyObject **more = PyMem_Realloc(stack, (size_t)capacity * 2 * sizeof(PyObject *));
                if (more == NULL) {
                    PyErr_NoMemory();
                    goto error;
                }
                stack = more;
                capacity *= 2;
            }
            stack[top++] = cls;
            if (!(((PyTypeObject *)cls)->tp_flags & static_flag) && PyList_Append(heap, cls) < 0) goto error;
        }
    }
    PyMem_Free(stack);
    PyMem_Free(seen.slots);
    return heap;
error:
    PyMem_Free(stack);
    PyMem_Free(seen.slots);
    Py_XDECREF(heap);
    return NULL;
}

PyDoc_STRVAR(same_names_doc,
"same_names(classes, names) -> bool\n\n"
"Whether each class of the list classes has, in its dictionary, exactly the keys of the tuple at the same place\n"
"of names, the very objects in that order (identity only: no key's hash or comparison runs).");

static PyObject *same_names(PyObject *module, PyObject *args) {
    PyObject *classes, *names;
    if (!PyArg_ParseTuple(args, "O!O!:same_names", &PyList_Type, &classes, &PyTuple_Type, &names)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(classes);
    if (PyTuple_GET_SIZE(names) != n) Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *cls = PyList_GET_ITEM(classes, i), *own = PyTuple_GET_ITEM(names, i);
        if (!PyType_Check(cls) || !PyTuple_CheckExact(own)) Py_RETURN_FALSE;
        PyObject *dict = ((PyTypeObject *)cls)->tp_dict;
        /* (a dict subclass where a C metaclass keeps one, as ctypes' types do: read as a dict, as iterating it reads it) */
        if (dict == NULL || !PyDict_Check(dict) || PyDict_GET_SIZE(dict) != PyTuple_GET_SIZE(own)) Py_RETURN_FALSE;
        Py_ssize_t pos = 0, j = 0;
        PyObject *key, *value;
        while (PyDict_Next(dict, &pos, &key, &value)) {
            if (j >= PyTuple_GET_SIZE(own) || key != PyTuple_GET_ITEM(own, j)) Py_RETURN_FALSE;
            j++;
        }
        if (j != PyTuple_GET_SIZE(own)) Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* descrobject.c's mappingproxyobject (unchanged from Python 3.3 to 3.11): read only after an exact type check */
typedef struct {
    PyObject_HEAD
    PyObject *mapping;
} proxyobject;

/* The dict a namespace reads: itself (a dict), or the one a mappingproxy wraps; NULL for anything else. */
static PyObject *namespace_dict(PyObject *ns) {
    if (PyDict_Check(ns)) return ns;
    if (Py_IS_TYPE(ns, &PyDictProxy_Type)) {
        PyObject *mapping = ((proxyobject *)ns)->mapping;
        if (mapping != NULL && PyDict_Check(mapping)) return mapping;
    }
    return NULL;
}

PyDoc_STRVAR(same_items_doc,
"same_items(namespaces, sizes, flat) -> bool\n\n"
"Whether each namespace (a dict, or a mappingproxy of one) has the size at its place of sizes, and their keys in\n"
"order, then their values in order, are the very objects of flat (identity only: no hash or comparison runs).");

static PyObject *same_items(PyObject *module, PyObject *args) {
    PyObject *namespaces, *sizes, *flat;
    if (!PyArg_ParseTuple(args, "O!O!O!:same_items", &PyTuple_Type, &namespaces, &PyTuple_Type, &sizes,
                          &PyTuple_Type, &flat))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(namespaces), total = 0;
    if (PyTuple_GET_SIZE(sizes) != n) Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *dict = namespace_dict(PyTuple_GET_ITEM(namespaces, i)), *size = PyTuple_GET_ITEM(sizes, i);
        if (dict == NULL || !PyLong_CheckExact(size)) Py_RETURN_FALSE;
        Py_ssize_t want = PyLong_AsSsize_t(size);
        if (want == -1 && PyErr_Occurred()) return NULL;
        if (PyDict_GET_SIZE(dict) != want) Py_RETURN_FALSE;
        total += want;
    }
    if (PyTuple_GET_SIZE(flat) != 2 * total) Py_RETURN_FALSE;
    Py_ssize_t k = 0, v = total;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *dict = namespace_dict(PyTuple_GET_ITEM(namespaces, i)), *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(dict, &pos, &key, &value)) {
            if (k >= total || key != PyTuple_GET_ITEM(flat, k) || value != PyTuple_GET_ITEM(flat, v)) Py_RETURN_FALSE;
            k++;
            v++;
        }
    }
    if (k != total) Py_RETURN_FALSE;
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"heap_classes", heap_classes, METH_VARARGS, heap_classes_doc},
    {"same_names", same_names, METH_VARARGS, same_names_doc},
    {"same_items", same_items, METH_VARARGS, same_items_doc},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {{0, NULL}};

static struct PyModuleDef frog_accel = {
    PyModuleDef_HEAD_INIT, "frog_accel", "The report vault's walk of the subclass tree and name comparison, in C.", 0,
    methods, slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_frog_accel(void) { return PyModuleDef_Init(&frog_accel); }
