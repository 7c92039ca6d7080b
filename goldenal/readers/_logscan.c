/*
 * The byte scan of a vLLM server log block, in C.
 *
 * vllm_log.py reads a family D line (vLLM's current "SpecDecoding metrics:"
 * line) in its logger layout with one regular expression per line; on a large
 * log that costs a microsecond a line, far more than finding the lines.  This
 * module does the same match for every marked line of a block in one call and
 * hands back the numbers as integers, so the reader's arithmetic runs on whole
 * columns.  It accepts exactly what vllm_log._FAST_LINE accepts (checked by
 * tests/test_ingest_kernel.py); any other marked line is only located and left
 * to the Python reader, which stays the reference.
 *
 * scan(buf, cut, kmax, before) -> (newlines, records)
 *   before    the line before buf (the previous block's last), for an engine tag;
 *   newlines  number of b"\n" in buf[:cut];
 *   records   int64 rows of REC_FIELDS + kmax values, one per line holding
 *             b"SpecDecoding metrics: " or b"peculative" (V0 metrics, a start-up
 *             speculative_config, or just a mention), in order (R_* below).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum {
    R_LINE,      /* newlines before the line, within the block */
    R_START,     /* offset of the line's first byte */
    R_TAG,       /* offset of the tag, -1 when the line has none */
    R_STATUS,    /* 0 the whole line matched; 1 the Python reader reads it;
                    2 a line with b"peculative", for the Python reader to look at */
    R_PID,       /* process id digits as a number, -1 without a "(Name pid=N)" prefix */
    R_STAMP,     /* the "MM-DD hh:mm:ss" stamp's digits as one number, MMDDhhmmss */
    R_DP,        /* "Engine NNN: " on the line before: NNN, -1 none, -2 too long a number */
    R_MEAN,      /* printed mean as an integer of R_MEAN_DIGITS decimals */
    R_MEAN_DIGITS,
    R_ACCEPTED,
    R_DRAFTED,
    R_PCT,       /* printed acceptance rate in tenths of a percent */
    R_K,         /* number of per-position rates */
    REC_FIELDS   /* then kmax rates in thousandths */
};

static const char TAG[] = "SpecDecoding metrics: ";
#define TAG_LEN (sizeof(TAG) - 1)
static const char RARE[] = "peculative";
/* integers longer than this are left to Python: the reader's float arithmetic
   is exact only below 2**53, and sums of a block's counts stay within int64 */
#define MAX_DIGITS 12

typedef struct {
    const unsigned char *p, *end;
} cursor;

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
static int is_word(unsigned char c)
{
    return is_digit(c) || is_upper(c) || (c >= 'a' && c <= 'z') || c == '_';
}

static int literal(cursor *c, const char *text)
{
    size_t n = strlen(text);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, text, n) != 0)
        return 0;
    c->p += n;
    return 1;
}

/* \d+ as a value; 0 when absent or longer than MAX_DIGITS */
static int digits(cursor *c, int64_t *value, int *count)
{
    int64_t v = 0;
    int n = 0;
    while (c->p < c->end && is_digit(*c->p)) {
        if (++n > MAX_DIGITS)
            return 0;
        v = v * 10 + (*c->p++ - '0');
    }
    *value = v;
    if (count)
        *count = n;
    return n > 0;
}

/* \d+\.\d+ as an integer and its number of decimals */
static int decimal(cursor *c, int64_t *value, int64_t *decimals)
{
    int64_t whole, frac;
    int nw, nf;
    if (!digits(c, &whole, &nw) || !literal(c, ".") || !digits(c, &frac, &nf) || nw + nf > 15)
        return 0;
    int64_t scale = 1;
    for (int i = 0; i < nf; i++)
        scale *= 10;
    *value = whole * scale + frac;
    *decimals = nf;
    return 1;
}

/* \d+(?:\.\d+)?, value unused */
static int throughput(cursor *c)
{
    const unsigned char *first = c->p;
    while (c->p < c->end && is_digit(*c->p))
        c->p++;
    if (c->p == first)
        return 0;
    if (c->end - c->p >= 2 && *c->p == '.' && is_digit(c->p[1])) {
        c->p++;
        while (c->p < c->end && is_digit(*c->p))
            c->p++;
    }
    return 1;
}

/* (?:\((\w+) pid=(\d+)\) )?[A-Z]+ (\d\d-\d\d \d\d:\d\d:\d\d) \[[\w.]+:\d+\] */
static int prefix(cursor *c, int64_t *rec)
{
    rec[R_PID] = -1;
    if (c->p < c->end && *c->p == '(') {
        cursor t = *c;
        t.p++;
        const unsigned char *w = t.p;
        while (t.p < t.end && is_word(*t.p))
            t.p++;
        const unsigned char *d;
        int64_t pid;
        int n;
        if (t.p > w && literal(&t, " pid=") && (d = t.p, digits(&t, &pid, &n))
                && literal(&t, ") ")) {
            if (n > 1 && *d == '0')
                return 0;  /* "pid=07": the process is the text, not the number */
            rec[R_PID] = pid;
            *c = t;
        }
    }
    const unsigned char *u = c->p;
    while (c->p < c->end && is_upper(*c->p))
        c->p++;
    if (c->p == u || !literal(c, " "))
        return 0;
    static const char shape[] = "00-00 00:00:00";
    if (c->end - c->p < 14)
        return 0;
    for (int i = 0; i < 14; i++) {
        unsigned char ch = c->p[i];
        if (shape[i] == '0' ? !is_digit(ch) : ch != (unsigned char)shape[i])
            return 0;
    }
    int64_t stamp = 0;
    for (int i = 0; i < 14; i++)
        if (shape[i] == '0')
            stamp = stamp * 10 + (c->p[i] - '0');
    rec[R_STAMP] = stamp;
    c->p += 14;
    if (!literal(c, " ["))
        return 0;
    const unsigned char *f = c->p;
    while (c->p < c->end && (is_word(*c->p) || *c->p == '.'))
        c->p++;
    int64_t ignored;
    return c->p > f && literal(c, ":") && digits(c, &ignored, NULL) && literal(c, "] ");
}

/* the message after the tag, through the end of the line */
static int message(cursor *c, int64_t *rec, int kmax)
{
    int64_t pct, tenths;
    if (!literal(c, "Mean acceptance length: ")
            || !decimal(c, &rec[R_MEAN], &rec[R_MEAN_DIGITS])
            || !literal(c, ", Accepted throughput: ") || !throughput(c)
            || !literal(c, " tokens/s, Drafted throughput: ") || !throughput(c)
            || !literal(c, " tokens/s, Accepted: ") || !digits(c, &rec[R_ACCEPTED], NULL)
            || !literal(c, " tokens, Drafted: ") || !digits(c, &rec[R_DRAFTED], NULL)
            || !literal(c, " tokens, Per-position acceptance rate: "))
        return 0;
    int k = 0;
    for (;;) {  /* \d\.\d{3}(?:, \d\.\d{3})* */
        if (c->end - c->p < 5 || !is_digit(c->p[0]) || c->p[1] != '.' || !is_digit(c->p[2])
                || !is_digit(c->p[3]) || !is_digit(c->p[4]) || k == kmax)
            return 0;
        rec[REC_FIELDS + k++] = (c->p[0] - '0') * 1000 + (c->p[2] - '0') * 100
                                + (c->p[3] - '0') * 10 + (c->p[4] - '0');
        c->p += 5;
        if (c->end - c->p >= 3 && c->p[0] == ',' && c->p[1] == ' ' && is_digit(c->p[2]))
            c->p += 2;
        else
            break;
    }
    rec[R_K] = k;
    if (!literal(c, ", Avg Draft acceptance rate: ") || !decimal(c, &pct, &tenths)
            || tenths != 1 || !literal(c, "%"))
        return 0;
    rec[R_PCT] = pct;
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\f' || *c->p == '\v'
                             || *c->p == '\r'))
        c->p++;
    return c->p == c->end;  /* the caller's end is the newline or the block's end */
}

/* \bEngine (\d+): somewhere in [line, end): its number, -1 none, -2 too long */
static int64_t engine_tag(const unsigned char *line, const unsigned char *end)
{
    for (const unsigned char *e = line; (e = memchr(e, 'E', end - e)) != NULL; e++) {
        if (end - e < 7 || memcmp(e, "Engine ", 7) != 0 || (e > line && is_word(e[-1])))
            continue;
        cursor c = {e + 7, end};
        const unsigned char *d = c.p;
        while (c.p < c.end && is_digit(*c.p))
            c.p++;
        if (c.p == d || !literal(&c, ": "))
            continue;
        if (c.p - d - 2 > 18)
            return -2;
        int64_t v = 0;
        for (const unsigned char *q = d; q < c.p - 2; q++)
            v = v * 10 + (*q - '0');
        return v;
    }
    return -1;
}

/* the last b"\n" in [p, end), or NULL */
static const unsigned char *last_newline(const unsigned char *p, const unsigned char *end)
{
#ifdef __GLIBC__
    return end > p ? memrchr(p, '\n', end - p) : NULL;
#else
    while (end > p)
        if (*--end == '\n')
            return end;
    return NULL;
#endif
}

static Py_ssize_t count_newlines(const unsigned char *p, const unsigned char *end)
{
    Py_ssize_t n = 0;
    for (; p < end; p++)  /* a loop the compiler vectorises */
        n += *p == '\n';
    return n;
}

static PyObject *scan(PyObject *self, PyObject *args)
{
    Py_buffer view, previous;
    Py_ssize_t cut;
    int kmax;
    if (!PyArg_ParseTuple(args, "y*niy*", &view, &cut, &kmax, &previous))
        return NULL;
    if (cut < 0 || cut > view.len || kmax < 1) {
        PyBuffer_Release(&view);
        PyBuffer_Release(&previous);
        PyErr_SetString(PyExc_ValueError, "cut must lie within the buffer and kmax be >= 1");
        return NULL;
    }
    const unsigned char *base = view.buf, *end = base + cut;
    Py_ssize_t width = REC_FIELDS + kmax, n = 0, cap = 0, newlines = 0;
    int64_t *recs = NULL;
    PyObject *result = NULL;

    Py_BEGIN_ALLOW_THREADS
    const unsigned char *pos = base;  /* always a line start */
    const unsigned char *tag = NULL, *rare = NULL;
    int tags_left = 1, rares_left = 1;
    for (;;) {
        /* the next tag and the next rare marker at or after pos, each searched once */
        if (tags_left && (tag == NULL || tag < pos)) {
            tag = memmem(pos, end - pos, TAG, TAG_LEN);
            tags_left = tag != NULL;
        }
        if (rares_left && (rare == NULL || rare < pos)) {
            rare = memmem(pos, end - pos, RARE, sizeof(RARE) - 1);
            rares_left = rare != NULL;
        }
        const unsigned char *hit = tags_left && (!rares_left || tag < rare) ? tag
                                   : rares_left ? rare : NULL;
        if (hit == NULL) {
            newlines += count_newlines(pos, end);
            break;
        }
        const unsigned char *start = last_newline(pos, hit);
        newlines += count_newlines(pos, hit);
        start = start ? start + 1 : pos;
        const unsigned char *eol = memchr(hit, '\n', end - hit);
        const unsigned char *stop = eol ? eol : end;
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            int64_t *grown = realloc(recs, (size_t)cap * width * sizeof(int64_t));
            if (grown == NULL) {
                n = -1;
                break;
            }
            recs = grown;
        }
        int64_t *rec = recs + n++ * width;
        memset(rec, 0, width * sizeof(int64_t));
        rec[R_LINE] = newlines;
        rec[R_START] = start - base;
        int tagged = tags_left && tag < stop, marked = rares_left && rare < stop;
        rec[R_TAG] = tagged ? tag - base : -1;
        if (marked) {
            rec[R_STATUS] = 2;
        } else {
            cursor c = {start, stop};
            int whole = prefix(&c, rec) && c.p == tag && literal(&c, TAG)
                        && message(&c, rec, kmax);
            rec[R_STATUS] = !whole;
            if (whole) {
                if (start == base) {  /* the line before is the previous block's last */
                    rec[R_DP] = engine_tag(previous.buf,
                                           (const unsigned char *)previous.buf + previous.len);
                } else {
                    const unsigned char *prev = last_newline(base, start - 1);
                    rec[R_DP] = engine_tag(prev ? prev + 1 : base, start);
                }
            }
        }
        if (eol == NULL)
            break;
        newlines++;
        pos = eol + 1;
    }
    Py_END_ALLOW_THREADS

    PyBuffer_Release(&view);
    PyBuffer_Release(&previous);
    if (n < 0) {
        free(recs);
        return PyErr_NoMemory();
    }
    PyObject *packed = PyBytes_FromStringAndSize((const char *)recs,
                                                 (Py_ssize_t)(n * width * sizeof(int64_t)));
    free(recs);
    if (packed != NULL) {
        result = Py_BuildValue("nN", newlines, packed);
    }
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buf, cut, kmax, before) -> (newlines, records): the marked lines of a log block."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_logscan",
    "Family D lines of a vLLM log block, matched and read in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__logscan(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyModule_AddIntConstant(m, "REC_FIELDS", REC_FIELDS) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
