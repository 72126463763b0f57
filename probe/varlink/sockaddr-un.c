#include "sockaddr-un.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

int sockaddr_un_set(struct sockaddr_un *ret, const char *path, socklen_t *ret_len)
{
        size_t len;

        if (!path || path[0] == '\0' || (path[0] == '@' && path[1] == '\0')) {
                return -EINVAL;
        }
        len = strlen(path);
        /* An abstract name is not terminated: all of sun_path may hold it. A file path needs
         * its terminator within sun_path. */
        if (path[0] == '@' ? len > sizeof(ret->sun_path) : len >= sizeof(ret->sun_path)) {
                return -ENAMETOOLONG;
        }
        *ret = (struct sockaddr_un){.sun_family = AF_UNIX};
        memcpy(ret->sun_path, path, len);
        if (path[0] == '@') {
                ret->sun_path[0] = '\0';
        } else {
                len++;
        }
        *ret_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
        return 0;
}
