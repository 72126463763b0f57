/* The CPU budget of serving clients: two token buckets and the io.jitterd.Busy refusal. */

#include "admission.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "util.h"

#define BUSY_ERROR "io.jitterd.Busy"

static const char *const light_methods[] = {
        "io.jitterd.GetStatus",
        "io.jitterd.Monitor",
        "org.varlink.service.GetInfo",
        "org.varlink.service.GetInterfaceDescription",
};

struct Admission {
        VarlinkServer *server;
        AdmissionLimits limits;
        Budget heavy, light;
};

/* True for the methods of the light bucket (@method fully qualified). */
static bool admission_method_is_light(const char *method)
{
        for (size_t i = 0; i < ELEMENTSOF(light_methods); i++) {
                if (strcmp(method, light_methods[i]) == 0) {
                        return true;
                }
        }
        return false;
}

static Budget *bucket_of(Admission *a, const char *method)
{
        return admission_method_is_light(method) ? &a->light : &a->heavy;
}

/* Reload from root or the daemon's own user, as systemd's ExecReload= runs it: never
 * refused, so that readers who spend the budget cannot make "systemctl reload" fail. Its CPU
 * is charged all the same. */
static bool admission_exempt(VarlinkCallCtx *call)
{
        uid_t uid;

        if (strcmp(varlink_call_method(call), "io.jitterd.Reload") != 0) {
                return false;
        }
        varlink_call_peer(call, &uid, NULL, NULL);
        return uid == 0 || uid == geteuid();
}

static bool admission_admit(VarlinkCallCtx *call, void *userdata)
{
        Admission *a = userdata;
        uint64_t wait_ns;
        uint64_t retry_ms;

        if (admission_exempt(call)) {
                return true;
        }
        wait_ns = budget_admit(bucket_of(a, varlink_call_method(call)), now_ns(CLOCK_MONOTONIC));
        if (wait_ns == 0) {
                return true;
        }
        /* Past the debt, and by the minimum more: a client that comes back then finds the
         * bucket with room for its call, this refusal's own cost paid. */
        retry_ms = wait_ns / 1000000 + 1 + ADMISSION_MIN_RETRY_MS;
        if (retry_ms > ADMISSION_MAX_RETRY_MS) {
                retry_ms = ADMISSION_MAX_RETRY_MS;
        }
        /* The hold first: answering the call detaches it from its connection. */
        varlink_call_hold_connection(call, retry_ms * 1000);
        (void)varlink_call_error(call, BUSY_ERROR,
                                 json_pack("{sI}", "retry_after_ms", (json_int_t)retry_ms));
        return false;
}

static void admission_charge(const char *method, uint64_t cpu_ns, void *userdata)
{
        Admission *a = userdata;

        budget_charge(bucket_of(a, method), now_ns(CLOCK_MONOTONIC), cpu_ns);
}

int admission_new(VarlinkServer *s, unsigned percent, Admission **ret)
{
        Admission *a;
        AdmissionLimits *l;
        uint64_t now = now_ns(CLOCK_MONOTONIC);

        if (percent < 1 || percent > 100) {
                return -EINVAL;
        }
        a = calloc(1, sizeof(*a));
        if (!a) {
                return -ENOMEM;
        }
        a->server = s;
        l = &a->limits;
        /* Integers divided once, so that 10 % gives 0.07 and 0.015 exactly as written. */
        l->cpu_ratio = percent / 100.0;
        l->heavy_ratio = percent * ADMISSION_HEAVY_SHARE_PERCENT / 10000.0;
        l->light_ratio = percent * ADMISSION_LIGHT_SHARE_PERCENT / 10000.0;
        l->heavy_burst_ns = percent * ADMISSION_HEAVY_BURST_NS_PER_PERCENT;
        l->light_burst_ns = percent * ADMISSION_LIGHT_BURST_NS_PER_PERCENT;
        budget_init(&a->heavy, l->heavy_ratio, l->heavy_burst_ns, now);
        budget_init(&a->light, l->light_ratio, l->light_burst_ns, now);
        varlink_server_set_gate(s, &(VarlinkServerGate){
                                           .admit = admission_admit,
                                           .charge = admission_charge,
                                           .userdata = a,
                                   });
        *ret = a;
        return 0;
}

Admission *admission_free(Admission *a)
{
        if (!a) {
                return NULL;
        }
        varlink_server_set_gate(a->server, NULL);
        free(a);
        return NULL;
}

void admission_limits(const Admission *a, AdmissionLimits *ret)
{
        *ret = a->limits;
}

void admission_charge_heavy(Admission *a, uint64_t cpu_ns)
{
        budget_charge(&a->heavy, now_ns(CLOCK_MONOTONIC), cpu_ns);
}

const char *const *admission_light_methods(size_t *ret_n)
{
        *ret_n = ELEMENTSOF(light_methods);
        return light_methods;
}
