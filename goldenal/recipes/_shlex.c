/*
 * The shell lexer of goldenal.recipes.shell, in C.
 *
 * shell.lex reads a text token by token with one regular expression match and
 * a few tests per token; the audit lexes every line that quotes, nests or
 * comments.  This module produces the same tokens in one call.  The Python
 * lexer (shell._lex_python) stays the reference: tests/test_recipes.py checks
 * that both give the same tokens, stack and end on any text.
 *
 * lex(text, stack, pos, closing) -> (tokens, stack, end)
 *   as shell.lex: tokens (kind, start, end, depth); stack the contexts open
 *   where text starts, each a one-character string ' " $ ` ( (any sequence of
 *   them, a str included); closing: stop after the token closing the
 *   outermost context.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

enum { K_BLANK, K_WORD, K_ESC, K_SQ, K_SQ_OPEN, K_SQ_END, K_DQ, K_QUOTE, K_SUB, K_SUB_END,
       K_TICK, K_TICK_END, K_LPAREN, K_RPAREN, K_SEMI, K_DSEMI, K_HASH, K_COUNT };

static const char *KIND_NAMES[K_COUNT] = {
    "blank", "word", "esc", "sq", "sq+", "sq)", "dq", "\"", "$(", "$)", "`", "`)", "(", ")",
    ";", ";;", "#"};
static PyObject *KINDS[K_COUNT];

/* the first characters of the tokens that are no run of ordinary characters */
static int special(Py_UCS4 c)
{
    return c == '\\' || c == '\'' || c == '"' || c == '$' || c == '`' || c == '(' ||
           c == ')' || c == '#' || c == ';' || c == ' ' || c == '\t' || c == '\n';
}

static int blank(Py_UCS4 c) { return c == ' ' || c == '\t' || c == '\n'; }

static int add(PyObject *toks, int kind, Py_ssize_t start, Py_ssize_t end, Py_ssize_t depth)
{
    PyObject *a = PyLong_FromSsize_t(start), *b = PyLong_FromSsize_t(end),
             *d = PyLong_FromSsize_t(depth);
    PyObject *tok = (a && b && d) ? PyTuple_Pack(4, KINDS[kind], a, b, d) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(d);
    if (tok == NULL)
        return -1;
    int rc = PyList_Append(toks, tok);
    Py_DECREF(tok);
    return rc;
}

static PyObject *lex(PyObject *self, PyObject *args)
{
    PyObject *text, *stack_in, *toks = NULL, *stack_out = NULL, *seq = NULL;
    Py_ssize_t pos;
    int closing;
    char *stack = NULL;
    if (!PyArg_ParseTuple(args, "UOnp", &text, &stack_in, &pos, &closing))
        return NULL;
    if (pos < 0) {
        PyErr_SetString(PyExc_ValueError, "pos must not be negative");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
#define AT(i) PyUnicode_READ(kind, data, (i))
    seq = PySequence_Fast(stack_in, "stack must be a sequence of contexts");
    if (seq == NULL)
        return NULL;
    Py_ssize_t given = PySequence_Fast_GET_SIZE(seq), sp = 0;
    /* each token opens at most one context: the stack never outgrows this */
    stack = PyMem_Malloc((size_t)(given + (n > pos ? n - pos : 0) + 1));
    if (stack == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < given; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyUnicode_Check(item) || PyUnicode_GET_LENGTH(item) != 1) {
            PyErr_SetString(PyExc_TypeError, "a context is a one-character string");
            goto fail;
        }
        stack[sp++] = (char)PyUnicode_READ_CHAR(item, 0);
    }
    toks = PyList_New(0);
    if (toks == NULL)
        goto fail;
    int word_end = 1;           /* the token before ends a word: a # there starts a comment */
    while (pos < n) {
        char top = sp ? stack[sp - 1] : 0;
        Py_ssize_t depth = sp, end;
        if (top == '\'') {      /* the rest of a string from an earlier line */
            end = pos;
            while (end < n && AT(end) != '\'')
                end++;
            if (end == n) {
                if (add(toks, K_SQ_OPEN, pos, n, depth - 1) < 0)
                    goto fail;
                pos = n;
                break;
            }
            if (add(toks, K_SQ_END, pos, end + 1, depth - 1) < 0)
                goto fail;
            pos = end + 1;
            sp--;
            word_end = 0;
            if (closing && !sp)
                break;
            continue;
        }
        if (top == '"') {       /* inside a double-quoted string that nests */
            end = pos;
            for (;;) {          /* ordinary characters, escapes, $ not opening $( */
                if (end >= n)
                    break;
                Py_UCS4 c = AT(end);
                if (c == '\\' && end + 1 < n)
                    end += 2;
                else if (c == '$' && !(end + 1 < n && AT(end + 1) == '('))
                    end++;
                else if (c != '"' && c != '\\' && c != '$' && c != '`')
                    end++;
                else
                    break;
            }
            int k = K_WORD;
            if (end == pos) {
                Py_UCS4 c = AT(pos);
                if (c == '"') {
                    sp--;
                    if (add(toks, K_QUOTE, pos, pos + 1, depth - 1) < 0)
                        goto fail;
                    pos++;
                    word_end = 0;
                    if (closing && !sp)
                        break;
                    continue;
                }
                if (c == '$') {
                    stack[sp++] = '$';
                    k = K_SUB;
                    end = pos + 2;
                } else if (c == '`') {
                    stack[sp++] = '`';
                    k = K_TICK;
                    end = pos + 1;
                } else {        /* a lone backslash ending the text */
                    end = pos + 1;
                }
            }
            if (add(toks, k, pos, end, depth) < 0)
                goto fail;
            pos = end;
            word_end = 0;
            continue;
        }
        Py_UCS4 c = AT(pos);
        Py_UCS4 next = pos + 1 < n ? AT(pos + 1) : 0;
        int k, closed = 0, line_join = 0;
        end = pos + 1;
        if (blank(c)) {
            while (end < n && blank(AT(end)))
                end++;
            k = K_BLANK;
        } else if (!special(c)) {
            while (end < n && !special(AT(end)))
                end++;
            k = K_WORD;
        } else if (c == '\'') {
            while (end < n && AT(end) != '\'')
                end++;
            if (end < n) {
                end++;
                k = K_SQ;
            } else {            /* unclosed: the rest is quoted */
                stack[sp++] = '\'';
                k = K_SQ_OPEN;
                end = n;
            }
        } else if (c == '"') {
            /* a string nesting nothing, closed: else the opening of one that nests */
            Py_ssize_t j = pos + 1;
            int flat = 0;
            while (j < n) {
                Py_UCS4 d = AT(j);
                if (d == '"') {
                    flat = 1;
                    break;
                }
                if (d == '\\') {
                    if (j + 1 >= n)
                        break;
                    j += 2;
                } else if (d == '$') {
                    if (j + 1 < n && AT(j + 1) == '(')
                        break;
                    j++;
                } else if (d == '`') {
                    break;
                } else {
                    j++;
                }
            }
            if (flat) {
                end = j + 1;
                k = K_DQ;
            } else {
                stack[sp++] = '"';
                k = K_QUOTE;
            }
        } else if (c == '\\') {
            if (pos + 1 < n)
                end = pos + 2;
            k = K_ESC;
            line_join = next == '\n';
        } else if (c == '$' && next == '(') {
            end = pos + 2;
            stack[sp++] = '$';
            k = K_SUB;
        } else if (c == '`') {
            if (top == '`') {
                sp--;
                depth--;
                k = K_TICK_END;
                closed = 1;
            } else {
                stack[sp++] = '`';
                k = K_TICK;
            }
        } else if (c == '(') {
            if (sp)
                stack[sp++] = '(';
            k = K_LPAREN;
        } else if (c == ')') {
            if (top == '$') {
                sp--;
                depth--;
                k = K_SUB_END;
                closed = 1;
            } else {
                if (top == '(') {
                    sp--;
                    depth--;
                }
                k = K_RPAREN;
            }
        } else if (c == '#' && !sp && word_end) {
            while (end < n && AT(end) != '\n')
                end++;
            k = K_HASH;
        } else if (c == ';') {
            if (next == ';') {
                end = pos + 2;
                k = K_DSEMI;
            } else {
                k = K_SEMI;
            }
        } else {                /* a $ opening nothing, a # inside a word */
            k = K_WORD;
        }
        if (add(toks, k, pos, end, depth) < 0)
            goto fail;
        pos = end;
        /* a line continuation reads as the blank parse joins the lines with */
        word_end = k == K_BLANK || k == K_SEMI || k == K_DSEMI || k == K_LPAREN || line_join;
        if (closing && closed && !sp)
            break;
    }
#undef AT
    stack_out = PyList_New(sp);
    if (stack_out == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < sp; i++) {
        PyObject *ctx = PyUnicode_FromOrdinal((unsigned char)stack[i]);
        if (ctx == NULL)
            goto fail;
        PyList_SET_ITEM(stack_out, i, ctx);
    }
    PyMem_Free(stack);
    Py_DECREF(seq);
    PyObject *result = Py_BuildValue("(NNn)", toks, stack_out, pos);
    return result;
fail:
    PyMem_Free(stack);
    Py_XDECREF(seq);
    Py_XDECREF(toks);
    Py_XDECREF(stack_out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"lex", lex, METH_VARARGS, "lex(text, stack, pos, closing) -> (tokens, stack, end)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_shlex",
                                    "The shell lexer of goldenal.recipes.shell, in C.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__shlex(void)
{
    for (int i = 0; i < K_COUNT; i++) {
        KINDS[i] = PyUnicode_InternFromString(KIND_NAMES[i]);
        if (KINDS[i] == NULL)
            return NULL;
    }
    return PyModule_Create(&module);
}
