/* jitter-bench-rpc: round-trip latency of GetStats over one connection, as tools/bench
 * reports it, or of GetWindow of CPU CPU. Prints "CALLS P50_US P99_US MAX_US".
 *   jitter-bench-rpc SOCKET CALLS [WINDOW [CPU]] */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "varlink-client.h"
#include "util.h"

int main(int argc, char **argv)
{
        const char *method = "io.jitterd.GetStats";
        VarlinkClient *c;
        json_t *params;
        uint64_t *lat;
        long n;
        int r;

        if (argc < 3 || (n = atol(argv[2])) <= 0) {
                fprintf(stderr, "usage: jitter-bench-rpc SOCKET CALLS [WINDOW [CPU]]\n");
                return 2;
        }
        r = varlink_client_connect(argv[1], &c);
        if (r < 0) {
                fprintf(stderr, "jitter-bench-rpc: cannot connect to %s: %s\n", argv[1],
                        strerror(-r));
                return 1;
        }
        if (argc > 4) {
                method = "io.jitterd.GetWindow";
                params = json_pack("{ss si}", "window", argv[3], "cpu", atoi(argv[4]));
        } else {
                params = json_pack("{ss sb}", "window", argc > 3 ? argv[3] : "1m",
                                   "without_analyses", true);
        }
        lat = calloc((size_t)n, sizeof(*lat));
        for (long i = 0; i < n; i++) {
                json_t *reply = NULL;
                char *err = NULL;
                uint64_t t0 = now_ns(CLOCK_MONOTONIC);

                r = varlink_client_call(c, method, params, &reply, &err);
                lat[i] = now_ns(CLOCK_MONOTONIC) - t0;
                if (r < 0 || err) {
                        fprintf(stderr, "jitter-bench-rpc: call %ld failed: %s\n", i,
                                err ? err : strerror(-r));
                        return 1;
                }
                json_decref(reply);
        }
        qsort(lat, (size_t)n, sizeof(*lat), cmp_u64);
        printf("%ld %.1f %.1f %.1f\n", n, (double)lat[n / 2] / 1e3,
               (double)lat[(size_t)((double)n * 0.99)] / 1e3, (double)lat[n - 1] / 1e3);
        json_decref(params);
        free(lat);
        varlink_client_free(c);
        return 0;
}
