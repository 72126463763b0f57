/* fuzz-varlink-codec: the Varlink wire codec on arbitrary bytes.
 *
 * The input is fed to a reader whole and, independently, in pieces whose sizes come from the
 * input itself; both readers must split it into the same messages and agree on the outcome.
 * Every message is parsed as a call and as a reply, and what parses as a call is serialised
 * and read back, which must give the same JSON. Small message limit, so oversize handling is
 * reached with small inputs. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "varlink.h"

#define CODEC_MAX_MESSAGE 1024
#define CODEC_MAX_MESSAGES 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next piece size for the split feed: 1..64 bytes, chosen by a small generator seeded
 * with the input so a crash reproduces from the input alone. */
static size_t codec_piece(uint32_t *state)
{
        *state = *state * 1103515245u + 12345u;
        return 1 + ((*state >> 16) % 64);
}

/* Checks what varlink_call_parse() and varlink_reply_parse() say about @msg, and that a call
 * survives a serialise/read round trip unchanged. */
static void codec_check_message(json_t *msg)
{
        VarlinkCall call;
        VarlinkReply reply;
        json_t *error = NULL;

        if (varlink_call_parse(msg, &call, &error) == 0) {
                VarlinkReader *r = NULL;
                json_t *again = NULL, *rebuilt;
                char *text = NULL;
                size_t len = 0;

                if (!call.method || strchr(call.method, '.') == NULL) {
                        abort();
                }
                if (call.parameters && !json_is_object(call.parameters)) {
                        abort();
                }
                if (call.more && call.oneway) {
                        abort();
                }
                rebuilt = varlink_call_new(call.method, json_incref(call.parameters), call.more,
                                           call.oneway);
                if (!rebuilt) {
                        abort();
                }
                if (varlink_message_serialize(msg, &text, &len) < 0 || len == 0 ||
                    text[len - 1] != '\0' || varlink_reader_new(len, &r) < 0 ||
                    varlink_reader_feed(r, text, len) < 0 || varlink_reader_next(r, &again) != 1 ||
                    !json_equal(msg, again)) {
                        abort();
                }
                json_decref(again);
                free(text);
                varlink_reader_free(r);
                json_decref(rebuilt);
        } else {
                /* A refused call names what is wrong, unless that could not be allocated. */
                json_decref(error);
        }
        if (varlink_reply_parse(msg, &reply) == 0) {
                if (reply.parameters && !json_is_object(reply.parameters)) {
                        abort();
                }
                if (reply.error && reply.error[0] == '\0') {
                        abort();
                }
        }
}

/* Takes every complete message out of @r into @out (NULL for a message that was refused).
 * Returns the number taken, or -EMSGSIZE once the reader failed. */
static int codec_drain(VarlinkReader *r, json_t **out, size_t *n)
{
        for (;;) {
                json_t *msg = NULL;
                int k = varlink_reader_next(r, &msg);

                if (k == 0) {
                        return 0;
                }
                if (k == -EMSGSIZE) {
                        return k;
                }
                if (k != 1 && k != -EBADMSG) {
                        abort();
                }
                if (*n >= CODEC_MAX_MESSAGES) {
                        json_decref(msg);
                        continue;
                }
                out[(*n)++] = k == 1 ? msg : NULL;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static json_t *whole[CODEC_MAX_MESSAGES], *split[CODEC_MAX_MESSAGES];
        VarlinkReader *a = NULL, *b = NULL;
        size_t n_whole = 0, n_split = 0, off = 0;
        uint32_t state = (uint32_t)size;
        int ra, rb = 0;

        for (size_t i = 0; i < size && i < 4; i++) {
                state = state * 31u + data[i];
        }
        if (varlink_reader_new(CODEC_MAX_MESSAGE, &a) < 0 ||
            varlink_reader_new(CODEC_MAX_MESSAGE, &b) < 0) {
                abort();
        }

        ra = varlink_reader_feed(a, data, size);
        if (ra == 0) {
                ra = codec_drain(a, whole, &n_whole);
        } else if (ra != -EMSGSIZE) {
                abort();
        }

        while (off < size && rb == 0) {
                size_t len = codec_piece(&state);

                if (len > size - off) {
                        len = size - off;
                }
                rb = varlink_reader_feed(b, data + off, len);
                if (rb == 0) {
                        rb = codec_drain(b, split, &n_split);
                }
                off += len;
        }
        if (rb != 0 && rb != -EMSGSIZE) {
                abort();
        }

        /* A limit is a property of the stream, not of how it arrives; and until it is hit the
         * split reader has seen the same messages as the whole one. */
        if ((ra == -EMSGSIZE) != (rb == -EMSGSIZE)) {
                abort();
        }
        if (ra == 0) {
                if (n_whole != n_split ||
                    varlink_reader_buffered(a) != varlink_reader_buffered(b)) {
                        abort();
                }
                for (size_t i = 0; i < n_whole; i++) {
                        if ((whole[i] == NULL) != (split[i] == NULL) ||
                            (whole[i] && !json_equal(whole[i], split[i]))) {
                                abort();
                        }
                }
        } else if (varlink_reader_next(a, &(json_t *){ NULL }) != -EMSGSIZE ||
                   varlink_reader_feed(a, "{}", 3) != -EMSGSIZE) {
                /* A failed reader stays failed. */
                abort();
        }

        for (size_t i = 0; i < n_whole; i++) {
                if (whole[i]) {
                        codec_check_message(whole[i]);
                }
                json_decref(whole[i]);
        }
        for (size_t i = 0; i < n_split; i++) {
                json_decref(split[i]);
        }
        varlink_reader_free(a);
        varlink_reader_free(b);
        return 0;
}
