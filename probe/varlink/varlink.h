#pragma once

/* The Varlink wire codec: framing of NUL-terminated JSON messages, strict parsing of calls and
 * replies, message builders and table-driven parameter validation. Pure: no I/O, no logging, no
 * knowledge of any particular interface. Shared by the server and the client. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define VARLINK_SERVICE_INTERFACE "org.varlink.service"

#define VARLINK_ERROR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"
#define VARLINK_ERROR_METHOD_NOT_FOUND "org.varlink.service.MethodNotFound"
#define VARLINK_ERROR_METHOD_NOT_IMPLEMENTED "org.varlink.service.MethodNotImplemented"
#define VARLINK_ERROR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"
#define VARLINK_ERROR_PERMISSION_DENIED "org.varlink.service.PermissionDenied"
#define VARLINK_ERROR_EXPECTED_MORE "org.varlink.service.ExpectedMore"

/* Longest interface name accepted; reverse-domain names are far shorter in practice. */
#define VARLINK_INTERFACE_NAME_MAX 255

typedef struct VarlinkReader VarlinkReader;

/* Creates a reader that splits a byte stream into messages of at most @max_message bytes (not
 * counting the NUL terminator). Returns 0, -EINVAL for a zero limit, or -ENOMEM. */
int varlink_reader_new(size_t max_message, VarlinkReader **ret);

/* Frees the reader and any buffered bytes. Accepts NULL; returns NULL. */
VarlinkReader *varlink_reader_free(VarlinkReader *r);

/* Appends @len received bytes. Any number of messages, or a fraction of one, may arrive in one
 * call. Returns 0; -EMSGSIZE if a complete or still incomplete message is longer than the
 * limit (the stream cannot be resynchronised after that: the reader keeps failing and the
 * connection must be dropped); -ENOMEM. */
int varlink_reader_feed(VarlinkReader *r, const void *data, size_t len);

/* Takes the next complete message. Returns 1 with a new reference in *ret, 0 if no complete
 * message is buffered, or -EBADMSG if the next message is not one well-formed JSON object
 * (invalid JSON or UTF-8, trailing junk, duplicate keys, a \u0000 escape inside a string, or
 * nesting deeper than the parser allows); that message is consumed and the reader stays usable
 * for the following ones. Returns -EMSGSIZE after an oversize feed. */
int varlink_reader_next(VarlinkReader *r, json_t **ret);

/* The last few messages a server parsed, by their bytes: a client that polls sends the same
 * calls over and over, and a call read again is not parsed again (the cost of parsing one is
 * mostly that of running the parser's code cold, when the call comes after a pause). Holds at
 * most VARLINK_MEMO_ENTRIES messages of VARLINK_MEMO_MAX_BYTES or less. The messages it hands
 * out are shared: their users must not change them. */
#define VARLINK_MEMO_ENTRIES 16
#define VARLINK_MEMO_MAX_BYTES 512
typedef struct VarlinkMemo VarlinkMemo;

/* Returns 0 or -ENOMEM. */
int varlink_memo_new(VarlinkMemo **ret);
/* Frees the memo and drops its references. Accepts NULL; returns NULL. */
VarlinkMemo *varlink_memo_free(VarlinkMemo *m);

/* varlink_reader_next(), with a message that has the bytes of one in @memo (NULL: none) taken
 * from there instead of parsed, and one parsed kept there, in place of the least recently
 * used. */
int varlink_reader_next_memo(VarlinkReader *r, VarlinkMemo *memo, json_t **ret);

/* Number of complete messages buffered and not yet taken with varlink_reader_next(). */
size_t varlink_reader_n_complete(const VarlinkReader *r);

/* Number of bytes buffered (complete messages and the incomplete tail). */
size_t varlink_reader_buffered(const VarlinkReader *r);

/* A method call as received, with pointers borrowed from the message it was parsed from. */
typedef struct VarlinkCall {
        const char *method; /* "interface.Method", validated */
        json_t *parameters; /* an object, or NULL when absent or null */
        bool more;
        bool oneway;
        bool upgrade;
} VarlinkCall;

/* Parses @msg strictly as a call: only the keys method, parameters, more, oneway and upgrade;
 * method a string "interface.Method" with a valid interface and member name; parameters an
 * object (or null/absent); the flags booleans (or null/absent); more and oneway not both set.
 * Returns 0, or -EBADMSG with an InvalidParameter error message naming the offending key in
 * *ret_error (NULL if that could not be allocated). */
int varlink_call_parse(json_t *msg, VarlinkCall *ret, json_t **ret_error);

/* A reply as received, with pointers borrowed from the message it was parsed from. */
typedef struct VarlinkReply {
        json_t *parameters; /* an object, or NULL when absent or null */
        const char *error;  /* the error name, or NULL for a successful reply */
        bool continues;
} VarlinkReply;

/* Parses @msg as a reply: parameters an object, continues a boolean, error a non-empty string;
 * other keys are ignored (the spec reserves them for extensions). Returns 0 or -EBADMSG. */
int varlink_reply_parse(json_t *msg, VarlinkReply *ret);

/* Builds a call message. Steals @params (NULL means no parameters). Returns NULL on allocation
 * failure or for an invalid combination (more with oneway). */
json_t *varlink_call_new(const char *method, json_t *params, bool more, bool oneway);

/* Builds a reply message {"parameters": ..., "continues": true}. Steals @params (NULL means an
 * empty object). Returns NULL on allocation failure. */
json_t *varlink_reply_new(json_t *params, bool continues);

/* Builds an error message {"error": @error, "parameters": ...}. Steals @params (NULL means an
 * empty object). Returns NULL on allocation failure. */
json_t *varlink_error_new(const char *error, json_t *params);

/* Builds org.varlink.service.InvalidParameter naming @name. Returns NULL on allocation failure. */
json_t *varlink_error_invalid_parameter(const char *name);

/* Serialises @msg as compact JSON followed by the NUL terminator. On success *ret is a malloc'ed
 * buffer and *ret_len counts every byte to send, NUL included. Returns 0, -EINVAL, -ENOMEM. */
int varlink_message_serialize(json_t *msg, char **ret, size_t *ret_len);

/* True if @name is a valid interface name: at least two dot-separated labels of letters, digits
 * and inner dashes, the first starting with a letter, at most VARLINK_INTERFACE_NAME_MAX bytes. */
bool varlink_interface_name_is_valid(const char *name);

/* True if @name is a valid method or error member name: an uppercase letter, then letters and
 * digits. */
bool varlink_member_name_is_valid(const char *name);

/* One entry of a parameter table. The type is JSON_STRING, JSON_INTEGER, JSON_REAL (any number),
 * JSON_TRUE or JSON_FALSE (any boolean), JSON_OBJECT, JSON_ARRAY, or JSON_NULL (any value). */
typedef struct VarlinkField {
        const char *name;
        json_type type;
        bool required;
} VarlinkField;

/* Checks @params (an object, or NULL for none) against the @n entries of @fields: unknown
 * fields, missing required fields and values of the wrong type are refused. A null value counts
 * as absent (the Varlink "?type" convention). Returns 0, or -EINVAL with an InvalidParameter error
 * message naming the field in *ret_error (NULL if that could not be allocated). The values are
 * then read with json_read_int_default() and json_read_string_default() (json-read.h). */
int varlink_params_check(json_t *params, const VarlinkField *fields, size_t n, json_t **ret_error);
