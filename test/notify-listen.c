/* jitter-notify-listen: stands in for systemd's notification socket in tests. Binds a datagram
 * socket at PATH (or the abstract address NAME for "@NAME", as $NOTIFY_SOCKET has it) and prints
 * every message it receives, one line per assignment, each message followed by a line "--",
 * until killed.
 *
 * To play a reader that stops reading: with --stop-after TEXT it reads nothing more after the
 * first message that contains TEXT, and with --pause SECONDS as well it reads again after that
 * long. It prints "-- paused" and "-- reading again" when it does. */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static void usage(void)
{
        fprintf(stderr, "usage: jitter-notify-listen [--stop-after TEXT [--pause SECONDS]] PATH\n");
}

int main(int argc, char **argv)
{
        static const struct option longopts[] = {
                {"stop-after", required_argument, NULL, 's'},
                {"pause", required_argument, NULL, 'p'},
                {},
        };
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        const char *stop_after = NULL, *path;
        double pause_s = -1; /* < 0: for good */
        socklen_t len;
        char buf[4096];
        int fd, c;

        while ((c = getopt_long(argc, argv, "", longopts, NULL)) >= 0) {
                switch (c) {
                case 's':
                        stop_after = optarg;
                        break;
                case 'p':
                        pause_s = atof(optarg);
                        break;
                default:
                        usage();
                        return 2;
                }
        }
        if (optind + 1 != argc || strlen(argv[optind]) >= sizeof(sa.sun_path)) {
                usage();
                return 2;
        }
        path = argv[optind];
        memcpy(sa.sun_path, path, strlen(path));
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
        if (path[0] == '@') {
                sa.sun_path[0] = '\0';
        } else {
                unlink(path);
                len++;
        }
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) < 0) {
                fprintf(stderr, "jitter-notify-listen: %s: %s\n", path, strerror(errno));
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
                if (stop_after && strstr(buf, stop_after)) {
                        struct timespec ts = {.tv_sec = (time_t)pause_s,
                                              .tv_nsec = (long)((pause_s - (time_t)pause_s) * 1e9)};

                        printf("-- paused\n");
                        stop_after = NULL;
                        if (pause_s < 0) {
                                for (;;) {
                                        pause();
                                }
                        }
                        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
                        }
                        printf("-- reading again\n");
                }
        }
}
