/* jitter-notify-listen: stands in for systemd's notification socket in tests. Binds a datagram
 * socket at PATH and prints every message it receives, one line per assignment, each message
 * followed by a line "--", until killed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char buf[4096];
        int fd;

        if (argc != 2 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
                fprintf(stderr, "usage: jitter-notify-listen PATH\n");
                return 2;
        }
        strcpy(sa.sun_path, argv[1]);
        unlink(argv[1]);
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                fprintf(stderr, "jitter-notify-listen: %s: %s\n", argv[1], strerror(errno));
                return 1;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        for (;;) {
                ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);

                if (n < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
                        return 1;
                }
                buf[n] = '\0';
                printf("%s\n--\n", buf);
        }
}
