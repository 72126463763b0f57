#include "varlink.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json-text.h"

/* A reader that handled a large message gives the memory back once it is drained, so that many
 * idle connections do not each pin their largest message. */
#define READER_KEEP_ALLOC 65536
#define READER_MIN_ALLOC 4096

struct VarlinkReader {
        char *buf;
        size_t alloc;
        size_t start;      /* first byte of the oldest message not yet taken */
        size_t end;        /* one past the last buffered byte */
        size_t tail;       /* first byte after the last NUL seen: the incomplete message */
        size_t n_complete; /* NUL-terminated messages in [start, tail) */
        size_t max_message;
        bool failed;
};

int varlink_reader_new(size_t max_message, VarlinkReader **ret)
{
        VarlinkReader *r;

        if (max_message == 0 || max_message > SIZE_MAX / 4) {
                return -EINVAL;
        }
        r = calloc(1, sizeof(*r));
        if (!r) {
                return -ENOMEM;
        }
        r->max_message = max_message;
        *ret = r;
        return 0;
}

VarlinkReader *varlink_reader_free(VarlinkReader *r)
{
        if (r) {
                free(r->buf);
                free(r);
        }
        return NULL;
}

static void reader_fail(VarlinkReader *r)
{
        free(r->buf);
        r->buf = NULL;
        r->alloc = r->start = r->end = r->tail = r->n_complete = 0;
        r->failed = true;
}

static int reader_reserve(VarlinkReader *r, size_t len)
{
        size_t need, alloc;
        char *p;

        if (r->start > 0) {
                /* Move the unconsumed bytes to the front before considering a bigger buffer. */
                memmove(r->buf, r->buf + r->start, r->end - r->start);
                r->end -= r->start;
                r->tail -= r->start;
                r->start = 0;
        }
        if (len > SIZE_MAX - r->end) {
                return -ENOMEM;
        }
        need = r->end + len;
        if (need <= r->alloc) {
                return 0;
        }
        alloc = r->alloc < READER_MIN_ALLOC ? READER_MIN_ALLOC : r->alloc;
        while (alloc < need) {
                if (alloc > SIZE_MAX / 2) {
                        alloc = need;
                        break;
                }
                alloc *= 2;
        }
        p = realloc(r->buf, alloc);
        if (!p) {
                return -ENOMEM;
        }
        r->buf = p;
        r->alloc = alloc;
        return 0;
}

int varlink_reader_feed(VarlinkReader *r, const void *data, size_t len)
{
        size_t pos;
        int ret;

        if (r->failed) {
                return -EMSGSIZE;
        }
        if (len == 0) {
                return 0;
        }
        ret = reader_reserve(r, len);
        if (ret < 0) {
                return ret;
        }
        memcpy(r->buf + r->end, data, len);
        pos = r->end;
        r->end += len;

        /* Only the new bytes are scanned, so a message fed one byte at a time costs linear
         * time; every message is checked against the limit as soon as its end is seen. */
        for (;;) {
                char *nul = memchr(r->buf + pos, '\0', r->end - pos);

                if (!nul) {
                        break;
                }
                if ((size_t)(nul - (r->buf + r->tail)) > r->max_message) {
                        reader_fail(r);
                        return -EMSGSIZE;
                }
                r->n_complete++;
                r->tail = (size_t)(nul - r->buf) + 1;
                pos = r->tail;
        }
        if (r->end - r->tail > r->max_message) {
                reader_fail(r);
                return -EMSGSIZE;
        }
        return 0;
}

typedef struct MemoEntry {
        char *text; /* NULL: unused */
        size_t len;
        json_t *msg;
        uint64_t used; /* the memo's clock when last found or kept */
} MemoEntry;

struct VarlinkMemo {
        MemoEntry entries[VARLINK_MEMO_ENTRIES];
        uint64_t clock;
};

int varlink_memo_new(VarlinkMemo **ret)
{
        VarlinkMemo *m = calloc(1, sizeof(*m));

        if (!m) {
                return -ENOMEM;
        }
        *ret = m;
        return 0;
}

static void memo_entry_clear(MemoEntry *e)
{
        free(e->text);
        json_decref(e->msg);
        *e = (MemoEntry){0};
}

VarlinkMemo *varlink_memo_free(VarlinkMemo *m)
{
        if (!m) {
                return NULL;
        }
        for (size_t i = 0; i < VARLINK_MEMO_ENTRIES; i++) {
                memo_entry_clear(&m->entries[i]);
        }
        free(m);
        return NULL;
}

/* A new reference to the message of @len bytes at @text when @m holds it, else NULL. */
static json_t *memo_find(VarlinkMemo *m, const char *text, size_t len)
{
        for (size_t i = 0; i < VARLINK_MEMO_ENTRIES; i++) {
                MemoEntry *e = &m->entries[i];

                if (e->text && e->len == len && memcmp(e->text, text, len) == 0) {
                        e->used = ++m->clock;
                        return json_incref(e->msg);
                }
        }
        return NULL;
}

/* Keeps @msg, parsed from the @len bytes at @text, in place of the least recently used entry;
 * nothing when the message is too long to be worth it or memory is short. */
static void memo_keep(VarlinkMemo *m, const char *text, size_t len, json_t *msg)
{
        MemoEntry *victim = &m->entries[0];
        char *copy;

        if (len > VARLINK_MEMO_MAX_BYTES) {
                return;
        }
        for (size_t i = 1; i < VARLINK_MEMO_ENTRIES && victim->text; i++) {
                MemoEntry *e = &m->entries[i];

                if (!e->text || e->used < victim->used) {
                        victim = e;
                }
        }
        copy = malloc(len);
        if (!copy) {
                return;
        }
        memcpy(copy, text, len);
        memo_entry_clear(victim);
        *victim =
                (MemoEntry){.text = copy, .len = len, .msg = json_incref(msg), .used = ++m->clock};
}

int varlink_reader_next(VarlinkReader *r, json_t **ret)
{
        return varlink_reader_next_memo(r, NULL, ret);
}

int varlink_reader_next_memo(VarlinkReader *r, VarlinkMemo *memo, json_t **ret)
{
        json_error_t error;
        json_t *msg = NULL;
        char *begin, *nul;

        if (r->failed) {
                return -EMSGSIZE;
        }
        if (r->n_complete == 0) {
                return 0;
        }
        begin = r->buf + r->start;
        nul = memchr(begin, '\0', r->tail - r->start);
        if (!nul) {
                /* n_complete says a terminator is buffered; not finding it is our bug. */
                reader_fail(r);
                return -EMSGSIZE;
        }

        /* No JSON_ALLOW_NUL: a \u0000 escape would let a string hide bytes from every C string
         * function that later sees it (method names, field names, error names), so such
         * messages are refused. A raw NUL can never reach the parser: it ends the message. */
        if (memo) {
                msg = memo_find(memo, begin, (size_t)(nul - begin));
        }
        if (!msg) {
                msg = json_loadb(begin, (size_t)(nul - begin), JSON_REJECT_DUPLICATES, &error);
                if (memo && json_is_object(msg)) {
                        memo_keep(memo, begin, (size_t)(nul - begin), msg);
                }
        }

        r->start = (size_t)(nul - r->buf) + 1;
        r->n_complete--;
        if (r->start == r->end) {
                r->start = r->end = r->tail = 0;
                if (r->alloc > READER_KEEP_ALLOC) {
                        free(r->buf);
                        r->buf = NULL;
                        r->alloc = 0;
                }
        }

        if (!msg) {
                return -EBADMSG;
        }
        if (!json_is_object(msg)) {
                json_decref(msg);
                return -EBADMSG;
        }
        *ret = msg;
        return 1;
}

size_t varlink_reader_n_complete(const VarlinkReader *r)
{
        return r->n_complete;
}

size_t varlink_reader_buffered(const VarlinkReader *r)
{
        return r->end - r->start;
}

static bool is_ascii_alpha(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_ascii_alnum(char c)
{
        return is_ascii_alpha(c) || (c >= '0' && c <= '9');
}

static bool interface_name_is_valid_n(const char *name, size_t n)
{
        size_t i = 0, labels = 0;

        if (n == 0 || n > VARLINK_INTERFACE_NAME_MAX || !is_ascii_alpha(name[0])) {
                return false;
        }
        while (i < n) {
                size_t first = i;

                while (i < n && name[i] != '.') {
                        if (!is_ascii_alnum(name[i]) && name[i] != '-') {
                                return false;
                        }
                        i++;
                }
                if (i == first || name[first] == '-' || name[i - 1] == '-') {
                        return false;
                }
                labels++;
                if (i < n) {
                        i++;
                        if (i == n) {
                                return false;
                        }
                }
        }
        return labels >= 2;
}

bool varlink_interface_name_is_valid(const char *name)
{
        return name && interface_name_is_valid_n(name, strlen(name));
}

bool varlink_member_name_is_valid(const char *name)
{
        size_t i;

        if (!name || !(name[0] >= 'A' && name[0] <= 'Z')) {
                return false;
        }
        for (i = 1; name[i] != '\0'; i++) {
                if (!is_ascii_alnum(name[i]) || i >= VARLINK_INTERFACE_NAME_MAX) {
                        return false;
                }
        }
        return true;
}

static bool method_is_valid(const char *method)
{
        const char *dot = strrchr(method, '.');

        return dot && varlink_member_name_is_valid(dot + 1) &&
               interface_name_is_valid_n(method, (size_t)(dot - method));
}

static int fail_invalid(const char *name, json_t **ret_error)
{
        if (ret_error) {
                *ret_error = varlink_error_invalid_parameter(name);
        }
        return -EBADMSG;
}

static int parse_flag(json_t *value, bool *ret)
{
        if (json_is_null(value)) {
                *ret = false;
                return 0;
        }
        if (!json_is_boolean(value)) {
                return -EBADMSG;
        }
        *ret = json_is_true(value);
        return 0;
}

int varlink_call_parse(json_t *msg, VarlinkCall *ret, json_t **ret_error)
{
        VarlinkCall call = {};
        const char *key;
        json_t *value;

        if (ret_error) {
                *ret_error = NULL;
        }
        if (!json_is_object(msg)) {
                return fail_invalid("method", ret_error);
        }
        json_object_foreach(msg, key, value)
        {
                if (strcmp(key, "method") == 0) {
                        if (!json_is_string(value) || !method_is_valid(json_string_value(value))) {
                                return fail_invalid(key, ret_error);
                        }
                        call.method = json_string_value(value);
                } else if (strcmp(key, "parameters") == 0) {
                        if (json_is_object(value)) {
                                call.parameters = value;
                        } else if (!json_is_null(value)) {
                                return fail_invalid(key, ret_error);
                        }
                } else if (strcmp(key, "more") == 0) {
                        if (parse_flag(value, &call.more) < 0) {
                                return fail_invalid(key, ret_error);
                        }
                } else if (strcmp(key, "oneway") == 0) {
                        if (parse_flag(value, &call.oneway) < 0) {
                                return fail_invalid(key, ret_error);
                        }
                } else if (strcmp(key, "upgrade") == 0) {
                        if (parse_flag(value, &call.upgrade) < 0) {
                                return fail_invalid(key, ret_error);
                        }
                } else {
                        return fail_invalid(key, ret_error);
                }
        }
        if (!call.method) {
                return fail_invalid("method", ret_error);
        }
        /* A oneway call gets no reply at all, so it cannot ask for several. */
        if (call.more && call.oneway) {
                return fail_invalid("oneway", ret_error);
        }
        *ret = call;
        return 0;
}

int varlink_reply_parse(json_t *msg, VarlinkReply *ret)
{
        VarlinkReply reply = {};
        json_t *value;

        if (!json_is_object(msg)) {
                return -EBADMSG;
        }
        value = json_object_get(msg, "parameters");
        if (json_is_object(value)) {
                reply.parameters = value;
        } else if (value && !json_is_null(value)) {
                return -EBADMSG;
        }
        value = json_object_get(msg, "continues");
        if (value && parse_flag(value, &reply.continues) < 0) {
                return -EBADMSG;
        }
        value = json_object_get(msg, "error");
        if (json_is_string(value)) {
                reply.error = json_string_value(value);
                if (reply.error[0] == '\0') {
                        return -EBADMSG;
                }
        } else if (value && !json_is_null(value)) {
                return -EBADMSG;
        }
        /* An error ends the call whatever else the message says. */
        if (reply.error && reply.continues) {
                return -EBADMSG;
        }
        *ret = reply;
        return 0;
}

static json_t *params_or_empty(json_t *params)
{
        if (!params) {
                return json_object();
        }
        if (!json_is_object(params)) {
                json_decref(params);
                return NULL;
        }
        return params;
}

json_t *varlink_call_new(const char *method, json_t *params, bool more, bool oneway)
{
        json_t *msg;

        params = params_or_empty(params);
        if (!params) {
                return NULL;
        }
        msg = json_object();
        if (!msg || !method || (more && oneway) ||
            json_object_set_new(msg, "method", json_string(method)) < 0) {
                json_decref(params);
                json_decref(msg);
                return NULL;
        }
        if (json_object_set_new(msg, "parameters", params) < 0 ||
            (more && json_object_set_new(msg, "more", json_true()) < 0) ||
            (oneway && json_object_set_new(msg, "oneway", json_true()) < 0)) {
                json_decref(msg);
                return NULL;
        }
        return msg;
}

json_t *varlink_reply_new(json_t *params, bool continues)
{
        json_t *msg;

        params = params_or_empty(params);
        if (!params) {
                return NULL;
        }
        msg = json_object();
        if (!msg) {
                json_decref(params);
                return NULL;
        }
        if (json_object_set_new(msg, "parameters", params) < 0 ||
            (continues && json_object_set_new(msg, "continues", json_true()) < 0)) {
                json_decref(msg);
                return NULL;
        }
        return msg;
}

json_t *varlink_error_new(const char *error, json_t *params)
{
        json_t *msg;

        params = params_or_empty(params);
        if (!params) {
                return NULL;
        }
        msg = json_object();
        if (!msg || !error) {
                json_decref(params);
                json_decref(msg);
                return NULL;
        }
        if (json_object_set_new(msg, "error", json_string(error)) < 0 ||
            json_object_set_new(msg, "parameters", params) < 0) {
                json_decref(msg);
                return NULL;
        }
        return msg;
}

json_t *varlink_error_invalid_parameter(const char *name)
{
        json_t *params = json_object();

        if (!params || json_object_set_new(params, "parameter", json_string(name)) < 0) {
                json_decref(params);
                return NULL;
        }
        return varlink_error_new(VARLINK_ERROR_INVALID_PARAMETER, params);
}

int varlink_message_serialize(json_t *msg, char **ret, size_t *ret_len)
{
        JsonText t = {0};
        size_t len;
        char *text;

        if (!json_is_object(msg)) {
                return -EINVAL;
        }
        /* Written as json_dumps(JSON_COMPACT) writes it, without its printf() for each of the
         * integers that fill our replies. Strings escape any NUL, so the only raw NUL is the
         * terminator, sent with the message. */
        json_text_value(&t, msg);
        text = json_text_take(&t, &len);
        if (!text) {
                return -ENOMEM;
        }
        *ret = text;
        *ret_len = len + 1;
        return 0;
}

static bool field_type_matches(json_type want, json_t *value)
{
        switch (want) {
        case JSON_NULL:
                return true;
        case JSON_TRUE:
        case JSON_FALSE:
                return json_is_boolean(value);
        case JSON_REAL:
                return json_is_number(value);
        default:
                return json_typeof(value) == want;
        }
}

static int check_failed(const char *name, json_t **ret_error)
{
        if (ret_error) {
                *ret_error = varlink_error_invalid_parameter(name);
        }
        return -EINVAL;
}

int varlink_params_check(json_t *params, const VarlinkField *fields, size_t n, json_t **ret_error)
{
        const char *key;
        json_t *value;

        if (ret_error) {
                *ret_error = NULL;
        }
        if (!params || json_is_null(params)) {
                params = NULL;
        } else if (!json_is_object(params)) {
                return check_failed("parameters", ret_error);
        }
        if (params) {
                json_object_foreach(params, key, value)
                {
                        const VarlinkField *f = NULL;

                        for (size_t i = 0; i < n; i++) {
                                if (strcmp(fields[i].name, key) == 0) {
                                        f = &fields[i];
                                        break;
                                }
                        }
                        if (!f) {
                                return check_failed(key, ret_error);
                        }
                        if (json_is_null(value)) {
                                if (f->required) {
                                        return check_failed(key, ret_error);
                                }
                                continue;
                        }
                        if (!field_type_matches(f->type, value)) {
                                return check_failed(key, ret_error);
                        }
                }
        }
        for (size_t i = 0; i < n; i++) {
                json_t *v = params ? json_object_get(params, fields[i].name) : NULL;

                if (fields[i].required && (!v || json_is_null(v))) {
                        return check_failed(fields[i].name, ret_error);
                }
        }
        return 0;
}
