#include "manager-private.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic-file.h"
#include "cpulist.h"
#include "host.h"
#include "isolation.h"
#include "duration.h"
#include "log.h"
#include "privileges.h"
#include "util.h"

#define STATE_FILE "history.state"
#define STATE_TMP "history.state.tmp"
#define HARVEST_DELAY_USEC 2000 /* probes acknowledge a new epoch within microseconds */
#define READY_POLL_USEC 20000
/* At exit, how long the last state change (STOPPING=1) may wait for a reader that has stopped
 * reading. */
#define NOTIFY_EXIT_FLUSH_USEC 1000000ULL

/* The state of @p for humans and the API: "running", "stalled", "offline", ... */
static const char *manager_probe_state(const ProbeCtl *p)
{
        ProbeState s;

        if (!p->probe) {
                return "stopped";
        }
        if (p->offline) {
                return "offline";
        }
        s = probe_state(p->probe);
        if (s == PROBE_RUNNING && p->stalled) {
                return "stalled";
        }
        return probe_state_name(s);
}

/* Why @p failed, one line naming its CPU (probe_failure(), or its errno when the probe gave no
 * text), into @buf; NULL when it has not failed. */
static const char *manager_probe_failure(const ProbeCtl *p, char *buf, size_t size)
{
        const char *text;

        if (!p->probe || probe_state(p->probe) != PROBE_FAILED) {
                return NULL;
        }
        text = probe_failure(p->probe);
        if (text[0]) {
                snprintf(buf, size, "%s", text);
        } else {
                snprintf(buf, size, "CPU %d: the probe failed: %s", p->cpu,
                         strerror(-probe_error(p->probe)));
        }
        return buf;
}

/* The CPUs to probe: the configured list, else the isolated (at boot or by cpusets) and
 * nohz_full CPUs. Each must be
 * online and allowed to us. */
static int resolve_cpus(Manager *m)
{
        cpu_set_t allowed, set;
        char buf[256];

        if (CPU_COUNT(&m->config.probe_cpus) > 0) {
                set = m->config.probe_cpus;
        } else {
                cpu_set_t nohz;
                Isolation iso;

                CPU_ZERO(&set);
                /* isolcpus= and the cpusets that isolate CPUs at run time alike. */
                if (isolation_read(NULL, &iso) == 0) {
                        isolation_cpus(&iso, &set);
                }
                if (host_read_cpulist(NULL, "/sys/devices/system/cpu/nohz_full", &nohz) == 0) {
                        CPU_OR(&set, &set, &nohz);
                }
                if (CPU_COUNT(&set) == 0) {
                        log_error("no CPUs to probe: this machine has no isolated (isolcpus=, "
                                  "cpuset shield or partition) or nohz_full CPUs; choose them with "
                                  "'cpus = LIST' in [probe] of %s "
                                  "or --cpus LIST (e.g. --cpus %d)",
                                  m->config_path, (int)sysconf(_SC_NPROCESSORS_ONLN) - 1);
                        return -EINVAL;
                }
        }
        /* Once the manager has moved to the housekeeping CPUs, its own affinity is no longer
         * what the process may use. */
        if (!m->have_allowed) {
                if (sched_getaffinity(0, sizeof(m->allowed), &m->allowed) < 0) {
                        log_error("cannot read the CPUs this process may use: %s", strerror(errno));
                        return -errno;
                }
                m->have_allowed = true;
        }
        allowed = m->allowed;
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (!CPU_ISSET(cpu, &set)) {
                        continue;
                }
                if (!host_cpu_online(cpu)) {
                        log_error("cannot probe CPU %d: it is offline or does not exist (online: "
                                  "/sys/devices/system/cpu/online)",
                                  cpu);
                        return -EINVAL;
                }
                if (!CPU_ISSET(cpu, &allowed)) {
                        log_error("cannot probe CPU %d: it is not in this process's allowed CPUs "
                                  "(%s); check the cpuset or CPUAffinity= of the unit",
                                  cpu, cpulist_format(buf, sizeof(buf), &allowed));
                        return -EINVAL;
                }
        }
        m->cpus = set;
        return 0;
}

/* --- checkpoint --------------------------------------------------------------------------- */

static int state_dir_fd(Manager *m)
{
        if (mkdir(m->config.history_state_dir, 0750) < 0 && errno != EEXIST) {
                return -errno;
        }
        int fd = open(m->config.history_state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static int write_history(FILE *f, void *userdata)
{
        Manager *m = userdata;

        return history_save(m->history, m->attrib, m->counter.hz, f);
}

/* Writes the history atomically, the directory synced too: the state must survive a crash. */
static int checkpoint_write(Manager *m)
{
        int dfd, r;

        if (m->config.history_checkpoint_ns == 0) {
                return 0;
        }
        dfd = state_dir_fd(m);
        if (dfd < 0) {
                return dfd;
        }
        r = atomic_file_write(dfd, STATE_TMP, STATE_FILE, 0640, ATOMIC_SYNC_FILE_AND_DIR,
                              write_history, m);
        close(dfd);
        return r;
}

static void checkpoint(Manager *m)
{
        int r = checkpoint_write(m);

        /* Once per episode: a full or read-only disk must not flood the journal, and
         * measuring goes on regardless. */
        if (r < 0 && !m->checkpoint_failing) {
                log_error("cannot write the checkpoint %s/%s: %s (measuring goes on; will retry)",
                          m->config.history_state_dir, STATE_FILE, strerror(-r));
                m->checkpoint_failing = true;
        } else if (r == 0 && m->checkpoint_failing) {
                log_notice("checkpoint written again to %s/%s", m->config.history_state_dir,
                           STATE_FILE);
                m->checkpoint_failing = false;
        }
}

static void checkpoint_load(Manager *m)
{
        char path[PATH_MAX + 32], aside[PATH_MAX + 96];
        uint32_t version;
        struct stat st;
        FILE *f;
        int fd, r;

        if (m->config.history_checkpoint_ns == 0) {
                return;
        }
        snprintf(path, sizeof(path), "%s/%s", m->config.history_state_dir, STATE_FILE);
        /* O_NONBLOCK and a regular file only: a FIFO there would hold the start forever. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
                close(fd);
                fd = -1;
                errno = EINVAL;
        }
        f = fd < 0 ? NULL : fdopen(fd, "re");
        if (!f) {
                if (fd >= 0) {
                        close(fd);
                }
                if (errno != ENOENT) {
                        log_warning("cannot read the checkpoint %s: %s; starting with an empty "
                                    "history",
                                    path, strerror(errno));
                }
                return;
        }
        /* Its version first: an older one is migrated, a newer one refused by name. */
        if (history_checkpoint_version(f, &version) < 0) {
                version = 0;
        }
        rewind(f);
        r = history_load(m->history, m->attrib, m->counter.hz, f);
        fclose(f);
        if (r == 0) {
                if (version < HISTORY_CHECKPOINT_VERSION) {
                        log_notice("history restored from %s, migrated from checkpoint version %u "
                                   "to %u (the file is rewritten at the next checkpoint)",
                                   path, version, HISTORY_CHECKPOINT_VERSION);
                } else {
                        log_info("history restored from %s", path);
                }
                return;
        }
        snprintf(aside, sizeof(aside), "%s.%s-%llu", path,
                 r == -ESTALE            ? "foreign"
                 : r == -EPROTONOSUPPORT ? "version"
                                         : "corrupt",
                 (unsigned long long)(now_ns(CLOCK_REALTIME) / NSEC_PER_SEC));
        if (rename(path, aside) < 0) {
                log_warning("checkpoint %s is unusable (%s) and cannot be moved aside: %s", path,
                            strerror(-r), strerror(errno));
        } else if (r == -EPROTONOSUPPORT) {
                log_warning("checkpoint %s is version %u, which this jitterd cannot read (it reads "
                            "versions %u to %u); moved it to %s and started with an empty history",
                            path, version, HISTORY_CHECKPOINT_VERSION_MIN,
                            HISTORY_CHECKPOINT_VERSION, aside);
        } else {
                log_warning("checkpoint %s is %s; moved it to %s and started with an empty history",
                            path,
                            r == -ESTALE ? "from another boot or a counter of another frequency"
                                         : "corrupt or truncated",
                            aside);
        }
}

/* Sets the timer @s to fire at @usec, enabled as @enabled. A timer that cannot be armed would
 * stop the daemon's work for good: that is logged, and the loop ends with status 1. */
static int rearm(Manager *m, sd_event_source *s, uint64_t usec, int enabled, const char *what)
{
        int r = sd_event_source_set_time(s, usec);

        if (r >= 0) {
                r = sd_event_source_set_enabled(s, enabled);
        }
        if (r < 0) {
                log_error("cannot arm the %s timer: %s", what, strerror(-r));
                return sd_event_exit(m->event, 1);
        }
        return 0;
}

static int on_checkpoint(sd_event_source *s, uint64_t usec, void *userdata)
{
        Manager *m = userdata;

        manager_yield(m);
        checkpoint(m);
        return rearm(m, s, usec + m->config.history_checkpoint_ns / 1000, SD_EVENT_ON,
                     "checkpoint");
}

/* --- probes ------------------------------------------------------------------------------- */

/* Sets up the probe of @cpu in @p and starts it; it runs on its CPU (preheating) on return.
 * Returns 0, or a negative errno after logging; @p then holds what must be freed. */
static int probe_ctl_start(Manager *m, ProbeCtl *p, int cpu)
{
        ProbeConfig pc = {
                .cpu = cpu,
                .priority = (int)m->config.probe_priority,
                .counter = m->counter,
                .threshold_ns = m->config.probe_threshold_ns,
                .preheat_ns = m->config.probe_preheat_ns,
                .ring_capacity = 8192,
                .thread_init = privileges_thread_init,
        };
        int r;

        p->manager = m;
        p->cpu = cpu;
        p->harvest_epoch = 1;
        p->advanced_epoch = 1;
        r = attrib_snapshot_new(&p->attrib_snap);
        if (r < 0) {
                return r;
        }
        host_msr_init(&p->smi_msr);
        r = probe_new(&pc, &p->probe);
        if (r < 0) {
                log_error("cannot set up the probe for CPU %d: %s%s", cpu, strerror(-r),
                          r == -EPERM || r == -ENOMEM ? " (locking its memory needs CAP_IPC_LOCK "
                                                        "or LimitMEMLOCK=infinity)"
                                                      : "");
                return r;
        }
        r = probe_start(p->probe);
        if (r < 0) {
                if (r == -EPERM) {
                        log_error("cannot run the probe on CPU %d SCHED_FIFO at priority %u: it "
                                  "needs CAP_SYS_NICE or RLIMIT_RTPRIO (run as root or set "
                                  "AmbientCapabilities=CAP_SYS_NICE)",
                                  cpu, m->config.probe_priority);
                } else if (r == -EIO || r == -EBUSY) {
                        /* Its CPU number lied, or something kept moving it: it says which. */
                        log_error("%s", probe_failure(p->probe));
                } else {
                        log_error("cannot pin the probe to CPU %d: %s (offline or outside the "
                                  "allowed CPUs?)",
                                  cpu, strerror(-r));
                }
                return r;
        }
        return 0;
}

static void log_probing(Manager *m)
{
        char buf[256];

        log_info("probing CPU %s with the %s counter at %.6f MHz (%s), %s, threshold %" PRIu64
                 " ns",
                 cpulist_format(buf, sizeof(buf), &m->cpus), counter_source_name(m->counter.source),
                 (double)m->counter.hz / 1e6, counter_hz_source_name(m->counter.hz_source),
                 m->config.probe_priority ? "SCHED_FIFO" : "SCHED_OTHER",
                 m->config.probe_threshold_ns);
}

static int probes_start(Manager *m)
{
        size_t n = (size_t)CPU_COUNT(&m->cpus), i = 0;
        int r;

        m->probes = calloc(n, sizeof(ProbeCtl));
        if (!m->probes) {
                return -ENOMEM;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (!CPU_ISSET(cpu, &m->cpus)) {
                        continue;
                }
                m->n_probes = ++i;
                r = probe_ctl_start(m, &m->probes[i - 1], cpu);
                if (r < 0) {
                        return r;
                }
        }
        log_probing(m);
        return 0;
}

/* Probes that would not stop: their threads may still touch their memory, which is kept
 * (and reachable) until the process exits. */
static Probe **abandoned;
static size_t n_abandoned;

static void abandon(Probe *p)
{
        Probe **a = realloc(abandoned, (n_abandoned + 1) * sizeof(*a));

        if (a) {
                abandoned = a;
                abandoned[n_abandoned++] = p;
        }
}

/* Stops and frees the @n probes of @a as probes_stop() does; the array itself stays. */
static int probes_stop_array(ProbeCtl *a, size_t n)
{
        uint64_t deadline = now_ns(CLOCK_MONOTONIC) + PROBE_STOP_TIMEOUT_NS;
        int r = 0;

        for (size_t i = 0; i < n; i++) {
                if (a[i].probe) {
                        (void)probe_stop_timeout(a[i].probe, 0);
                }
        }
        for (size_t i = 0; i < n; i++) {
                ProbeCtl *p = &a[i];
                uint64_t now = now_ns(CLOCK_MONOTONIC);

                if (p->probe &&
                    probe_stop_timeout(p->probe, deadline > now ? deadline - now : 0) < 0) {
                        log_error("the probe on CPU %d did not stop within %llu s (starved by a "
                                  "higher-priority task?); leaving it behind",
                                  p->cpu, PROBE_STOP_TIMEOUT_NS / NSEC_PER_SEC);
                        abandon(p->probe);
                        r = -ETIMEDOUT;
                } else {
                        probe_free(p->probe);
                }
                p->probe = NULL;
                attrib_snapshot_free(p->attrib_snap);
                p->attrib_snap = NULL;
                host_msr_done(&p->smi_msr);
        }
        return r;
}

/* Stops every probe within one PROBE_STOP_TIMEOUT_NS, all asked at once. A probe starved by a
 * higher-priority task cannot see the request: it is logged and left behind rather than waited
 * for. Returns 0, or -ETIMEDOUT when one was left behind: the process must then exit, as that
 * thread still spins on its CPU. */
static int probes_stop(Manager *m)
{
        int r = probes_stop_array(m->probes, m->n_probes);

        free(m->probes);
        m->probes = NULL;
        m->n_probes = 0;
        return r;
}

/* Keeps the manager off the probed CPUs: it runs on the housekeeping CPUs only. Where every
 * CPU it may use is probed, a SCHED_FIFO loop goes back to SCHED_OTHER: behind a probe of its
 * priority or above it would never run, and RT throttling lends time to SCHED_OTHER only. */
static void pin_manager(Manager *m)
{
        cpu_set_t allowed = m->allowed, house;

        if (!m->have_allowed && sched_getaffinity(0, sizeof(allowed), &allowed) < 0) {
                return;
        }
        CPU_XOR(&house, &allowed, &m->cpus);
        CPU_AND(&house, &house, &allowed);
        if (CPU_COUNT(&house) == 0) {
                struct sched_param other = {.sched_priority = 0};

                log_warning("every allowed CPU is probed: the manager shares a CPU with a probe");
                if (sched_getscheduler(0) == SCHED_FIFO &&
                    sched_setscheduler(0, SCHED_OTHER, &other) == 0) {
                        m->loop_fifo = false;
                        log_warning("the event loop runs SCHED_OTHER, not SCHED_FIFO as "
                                    "[server] loop_priority asks, until a CPU is left to it");
                }
                return;
        }
        if (sched_setaffinity(0, sizeof(house), &house) < 0) {
                log_warning("cannot move the manager to the housekeeping CPUs: %s",
                            strerror(errno));
        }
}

/* The event loop's scheduling, from [server] loop_priority: SCHED_FIFO at that priority, so that
 * no SCHED_OTHER task of the housekeeping CPUs delays a reply, or SCHED_OTHER. Set before the
 * probes start: their threads set their own policy, never the loop's. Returns 0, or a negative
 * errno after saying why. */
static int set_loop_priority(Manager *m)
{
        unsigned prio = m->config.server_loop_priority;
        struct sched_param sp = {.sched_priority = (int)prio};
        int r;

        if (prio == 0) {
                return 0;
        }
        /* pid 0: the calling thread, the loop's. */
        r = sched_setscheduler(0, SCHED_FIFO, &sp) < 0 ? -errno : 0;
        if (r < 0) {
                log_error("cannot run the event loop SCHED_FIFO at priority %u ([server] "
                          "loop_priority): %s%s",
                          prio, strerror(-r),
                          r == -EPERM ? " (RestrictRealtime= in a drop-in of the unit, or a "
                                        "cgroup without real-time runtime?)"
                                      : "");
                return r;
        }
        log_info("event loop: SCHED_FIFO at priority %u", prio);
        m->loop_fifo = true;
        return 0;
}

/* --- the interval ------------------------------------------------------------------------- */

static void harvest_probe(Manager *m, ProbeCtl *p)
{
        ProbeSlot *slot = &p->last;
        bool got = false;

        attrib_delta_clear(&p->harvested_attrib);
        while (p->harvest_epoch < probe_acked_epoch(p->probe)) {
                if (probe_harvest(p->probe, p->harvest_epoch, slot) == 0 && slot->gap.count > 0) {
                        uint64_t start_ns, start_real_ns;

                        clock_pair_map(&m->clock_ref, &m->counter.conv, slot->start_ticks,
                                       &start_ns, &start_real_ns);
                        p->last_start_ns = start_ns;
                        p->last_duration_ns = tickconv_to_ns(&m->counter.conv,
                                                             slot->end_ticks - slot->start_ticks);
                        attrib_delta_copy(&p->last_attrib,
                                          &p->epoch_attrib[p->harvest_epoch % PROBE_SLOTS]);
                        attrib_delta_add(&p->harvested_attrib, &p->last_attrib);
                        (void)history_add_interval(m->history, p->cpu, p->last_start_ns,
                                                   p->last_duration_ns, slot, p->stall_pending,
                                                   &p->last_attrib);
                        for (size_t h = 0; h < m->n_hooks; h++) {
                                const ManagerInterval iv = {
                                        .cpu = p->cpu,
                                        .state = manager_probe_state(p),
                                        .slot = slot,
                                        .attrib = &p->last_attrib,
                                        .start_ns = start_ns,
                                        .start_real_ns = start_real_ns,
                                        .duration_ns = p->last_duration_ns,
                                };

                                if (m->hooks[h].interval) {
                                        m->hooks[h].interval(m, &iv, m->hooks[h].userdata);
                                }
                        }
                        p->stall_pending = false;
                        p->samples_total += slot->gap.count;
                        got = true;
                }
                p->harvest_epoch++;
        }
        p->have_last = got;
        manager_drain_events(m, p);
}

static void update_status(Manager *m)
{
        char line[1024];
        size_t len = 0;

        for (size_t i = 0; i < m->n_probes && len < sizeof(line) - 64; i++) {
                ProbeCtl *p = &m->probes[i];
                char w[32];

                len += (size_t)snprintf(line + len, sizeof(line) - len, "%sCPU %d %s",
                                        i ? "; " : "", p->cpu, manager_probe_state(p));
                if (p->have_last) {
                        len += (size_t)snprintf(
                                line + len, sizeof(line) - len, ", worst %s, %" PRIu64 " int",
                                duration_format(w, sizeof(w),
                                                tickconv_to_ns(&m->counter.conv, p->last.gap.max)),
                                p->last.events);
                }
        }
        notifier_status(m->notifier, "STATUS=%s", line);
}

static int on_harvest(sd_event_source *s, uint64_t usec, void *userdata)
{
        Manager *m = userdata;

        manager_yield(m);
        manager_trace_read(m);
        for (size_t i = 0; i < m->n_probes; i++) {
                harvest_probe(m, &m->probes[i]);
        }
        manager_trace_harvested(m);
        for (size_t i = 0; i < m->n_hooks; i++) {
                if (m->hooks[i].harvest) {
                        m->hooks[i].harvest(m, m->hooks[i].userdata);
                }
        }
        update_status(m);
        return 0;
}

/* One probe at the tick: its state for the API (offline, migrated, failed, stalled), each
 * change logged once, and the next epoch. Nothing here waits for the probe: one that does not
 * acknowledge is only counted (stalled after two intervals) and asked again at the next tick,
 * so it never holds up the other probes or the loop. Returns whether the epoch advanced: the
 * epoch that ended then needs its attribution counters (tick()). */
static bool tick_probe(ProbeCtl *p)
{
        ProbeState st = probe_state(p->probe);
        int64_t e;

        /* A probe that runs on its CPU needs no look at sysfs to know it is online. */
        p->offline = st != PROBE_RUNNING && st != PROBE_PREHEATING && !host_cpu_online(p->cpu);
        /* Moved off an online CPU: a cpuset or affinity change that it cannot undo. Said once
         * per episode; it measures nothing meanwhile. */
        if (st == PROBE_MIGRATED && !p->offline && !p->migrated) {
                log_warning("the probe on CPU %d was moved to CPU %d and cannot go back (is CPU "
                            "%d still in the daemon's cpuset and CPUAffinity=?): not measuring "
                            "CPU %d until it can",
                            p->cpu, probe_migrated_to(p->probe), p->cpu, p->cpu);
                p->migrated = true;
        } else if (st != PROBE_MIGRATED && p->migrated) {
                log_notice("the probe is back on CPU %d", p->cpu);
                p->migrated = false;
        }
        /* A failed probe has ended its thread: said once, with the probe's reason. */
        if (st == PROBE_FAILED && !p->failed) {
                char why[PROBE_FAILURE_MAX + 64];

                log_error("probe failed: %s; CPU %d is not measured until a reload or restart",
                          manager_probe_failure(p, why, sizeof(why)), p->cpu);
                p->failed = true;
        }
        if (st != PROBE_RUNNING && st != PROBE_PREHEATING) {
                p->missed = 0;
                p->stalled = false;
        } else if (probe_acked_epoch(p->probe) < p->advanced_epoch) {
                p->missed++;
        } else {
                p->missed = 0;
        }
        if (p->missed >= 2 && !p->stalled) {
                log_warning("the probe on CPU %d made no progress for %u intervals: stalled (a "
                            "higher-priority task or RT throttling?)",
                            p->cpu, p->missed);
        }
        p->stalled = p->missed >= 2;
        if (p->stalled) {
                /* Marked on the interval the probe hands over when it comes back, which covers
                 * the stall and holds its gap. */
                p->stall_pending = true;
                p->have_last = false;
        }
        /* -EBUSY while the probe has not acknowledged the current epoch: tried again at the
         * next tick. */
        e = probe_advance(p->probe);
        if (e <= 0) {
                return false;
        }
        p->advanced_epoch = (uint64_t)e;
        return true;
}

/* The request for the attribution counters of the epoch @p just ended. */
static AttribRequest attrib_request(ProbeCtl *p)
{
        return (AttribRequest){
                .snap = p->attrib_snap,
                .cpu = p->cpu,
                .pid = getpid(),
                .tid = probe_tid(p->probe),
                .delta = &p->epoch_attrib[(p->advanced_epoch - 1) % PROBE_SLOTS],
        };
}

/* Reads @path below the audit root, the text valid until the next read. A file that cannot
 * be read gives no counts this time: only a lack of memory is an error. */
static int attrib_read(Manager *m, const char *path, const char **ret_text, size_t *ret_len)
{
        ssize_t len = host_files_read(m->attrib_files, m->config.audit_root, path, ret_text);

        if (len < 0) {
                return len == -ENOMEM ? -ENOMEM : 0;
        }
        *ret_len = (size_t)len;
        return 1;
}

/* The context switches of @p's thread and the SMI count of its CPU, for its request @req. */
static int attrib_sample_probe(Manager *m, ProbeCtl *p, AttribRequest *req)
{
        const char *text;
        char path[64];
        uint64_t smi;
        size_t len;
        int ret = 0, r;

        if (req->tid > 0) {
                if (req->pid > 0) {
                        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", req->pid, req->tid);
                } else {
                        snprintf(path, sizeof(path), "/proc/%d/status", req->tid);
                }
                ret = attrib_read(m, path, &text, &len);
                if (ret > 0) {
                        ret = attrib_record_status(m->attrib, text, req);
                }
        }
        /* No msr module, no CAP_SYS_RAWIO or no such register: no SMI count, not an error. */
        if (host_msr_read(&p->smi_msr, m->config.audit_root, req->cpu, ATTRIB_SMI_MSR, &smi) == 0) {
                r = attrib_record_smi(m->attrib, smi, req);
                ret = ret ? ret : r;
        }
        return ret;
}

/* The attribution counters of the @n requests, each file recorded as soon as it is read:
 * /proc/interrupts and /proc/softirqs once for all of them, then each probe's own. @reqs are
 * in the order of the probes they belong to. Every request is filled even when one fails;
 * returns the first error. */
static int attrib_sample(Manager *m, AttribRequest *reqs, size_t n)
{
        const char *text;
        size_t len, k = 0;
        int ret, r;

        ret = attrib_begin(m->attrib, reqs, n);
        if (ret < 0) {
                return ret;
        }
        r = attrib_read(m, "/proc/interrupts", &text, &len);
        if (r > 0) {
                r = attrib_record_interrupts(m->attrib, text, len, reqs, n);
        }
        ret = r;
        r = attrib_read(m, "/proc/softirqs", &text, &len);
        if (r > 0) {
                r = attrib_record_softirqs(m->attrib, text, len, reqs, n);
        }
        ret = ret ? ret : r;
        for (size_t i = 0; i < m->n_probes && k < n; i++) {
                if (m->probes[i].attrib_snap == reqs[k].snap) {
                        r = attrib_sample_probe(m, &m->probes[i], &reqs[k++]);
                        ret = ret ? ret : r;
                }
        }
        return ret;
}

/* The tick's work: the clock mapping, every probe's state and next epoch, then the attribution
 * counters of the epochs that ended, read as they end, not when they are harvested:
 * /proc/interrupts and /proc/softirqs once for all of them (on a big host each is a table of
 * every CPU, the tick's largest cost), each probe thread's status file for its context
 * switches. */
static void tick(Manager *m)
{
        _cleanup_free_ AttribRequest *reqs = calloc(m->n_probes ? m->n_probes : 1, sizeof(*reqs));
        size_t n = 0;
        ClockPair now;

        clock_pair_sample(m->counter.source, &now);
        if (m->have_clock_ref) {
                m->drift_ppm = clock_pair_drift_ppm(&m->clock_ref, &now, &m->counter.conv);
        }
        m->clock_ref = now;
        m->have_clock_ref = true;

        for (size_t i = 0; i < m->n_probes; i++) {
                /* Out of memory: these epochs go without counters, the next ones have them. */
                if (tick_probe(&m->probes[i]) && reqs) {
                        reqs[n++] = attrib_request(&m->probes[i]);
                }
        }
        if (n > 0) {
                (void)attrib_sample(m, reqs, n);
        }
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
        Manager *m = userdata;
        int r;

        manager_yield(m);
        tick(m);
        manager_drain_start(m);
        r = rearm(m, s, usec + m->config.history_interval_ns / 1000, SD_EVENT_ON, "tick");
        /* The harvest takes, once, what the probes acknowledged by then; a late one is taken at
         * the next. */
        if (r >= 0 && m->harvest_source) {
                r = rearm(m, m->harvest_source, usec + HARVEST_DELAY_USEC, SD_EVENT_ONESHOT,
                          "harvest");
        }
        return r;
}

/* Logs, one line per probe, what each one is doing: why READY=1 was not sent. */
static void log_probe_states(Manager *m)
{
        for (size_t i = 0; i < m->n_probes; i++) {
                ProbeCtl *p = &m->probes[i];
                char why[PROBE_FAILURE_MAX + 64];
                ProbeState st = probe_state(p->probe);

                if (st == PROBE_FAILED) {
                        log_error("%s", manager_probe_failure(p, why, sizeof(why)));
                        p->failed = true;
                } else if (st == PROBE_MIGRATED && !host_cpu_online(p->cpu)) {
                        log_error("CPU %d: offline (unplugged), its probe cannot run", p->cpu);
                } else if (st == PROBE_MIGRATED) {
                        log_error("CPU %d: migrated, its probe found itself on CPU %d and cannot "
                                  "go back (is CPU %d in the daemon's cpuset and CPUAffinity=?)",
                                  p->cpu, probe_migrated_to(p->probe), p->cpu);
                } else {
                        log_error("CPU %d: %s", p->cpu, probe_state_name(st));
                }
        }
}

/* READY=1 waits until every probe runs on its CPU, after its preheat: never while one is
 * preheating, migrated or failed. It waits at most the preheat and READY_GRACE_USEC; past that,
 * or as soon as a probe failed, it says why and ends the loop with status 1, so that systemd
 * sees a failed start (or reload) rather than waiting for its own timeout. */
static int on_ready_poll(sd_event_source *s, uint64_t usec, void *userdata)
{
        Manager *m = userdata;
        bool all_running = true, failed = false;

        for (size_t i = 0; i < m->n_probes; i++) {
                ProbeState st = probe_state(m->probes[i].probe);

                failed = failed || st == PROBE_FAILED;
                all_running = all_running && st == PROBE_RUNNING;
        }
        if (all_running) {
                m->ready = true;
                (void)sd_event_source_set_enabled(s, SD_EVENT_OFF);
                notifier_state(m->notifier, "READY=1\nSTATUS=probes preheated, measuring");
                log_info("ready: %zu probe%s preheated, measuring; socket %s", m->n_probes,
                         m->n_probes == 1 ? "" : "s", m->socket_path);
                for (size_t h = 0; h < m->n_hooks; h++) {
                        if (m->hooks[h].ready) {
                                m->hooks[h].ready(m, m->hooks[h].userdata);
                        }
                }
                return 0;
        }
        if (failed || usec >= m->ready_deadline_usec) {
                char bound[32], preheat[32];

                (void)sd_event_source_set_enabled(s, SD_EVENT_OFF);
                if (failed) {
                        log_error("cannot get ready: a probe failed");
                } else {
                        log_error("cannot get ready: the probes are not all running %s after "
                                  "they started (preheat %s and %llu s)",
                                  duration_format(bound, sizeof(bound),
                                                  m->config.probe_preheat_ns +
                                                          READY_GRACE_USEC * 1000),
                                  duration_format(preheat, sizeof(preheat),
                                                  m->config.probe_preheat_ns),
                                  READY_GRACE_USEC / 1000000ULL);
                }
                log_probe_states(m);
                notifier_status(m->notifier, "STATUS=not ready: %s",
                                failed ? "a probe failed" : "the probes are not all running");
                return sd_event_exit(m->event, 1);
        }
        return rearm(m, s, usec + READY_POLL_USEC, SD_EVENT_ON, "readiness");
}

/* Waits for every probe to run before READY=1 (on_ready_poll), from now on, and tells systemd
 * how long that may take: with a preheat longer than the default, TimeoutStartSec= alone would
 * end the start first. */
static void arm_ready(Manager *m)
{
        uint64_t now = now_ns(CLOCK_MONOTONIC) / 1000;
        uint64_t wait = m->config.probe_preheat_ns / 1000 + READY_GRACE_USEC;

        m->ready = false;
        m->ready_deadline_usec = now + wait;
        /* The start may also end with a checkpoint and stopping the probes. */
        notifier_status(m->notifier, "EXTEND_TIMEOUT_USEC=%llu\nSTATUS=preheating the probes",
                        (unsigned long long)(wait + PROBE_STOP_TIMEOUT_NS / 1000 + 5000000ULL));
        (void)rearm(m, m->ready_source, now + READY_POLL_USEC, SD_EVENT_ON, "readiness");
}

/* --- reload and signals ------------------------------------------------------------------- */

/* The rules between keys, once the options are applied. Returns 0, or -EINVAL after logging. */
static int check_overridden(const Config *c)
{
        _cleanup_free_ char *err = NULL;

        if (config_check(c, &err) < 0) {
                log_error("%s", err ? err : "the options contradict the configuration");
                return -EINVAL;
        }
        return 0;
}

/* Applies the command-line overrides to @c. Returns 0, or -EINVAL after logging. */
static int apply_overrides(Config *c, const Overrides *o)
{
        static const struct {
                const char *section, *key;
                size_t offset;
        } map[] = {
                {"probe", "cpus", offsetof(Overrides, cpus)},
                {"server", "socket", offsetof(Overrides, socket)},
                {"history", "state_dir", offsetof(Overrides, state_dir)},
                {"history", "interval", offsetof(Overrides, interval)},
                {"probe", "threshold", offsetof(Overrides, threshold)},
                {"export", "prometheus_textfile", offsetof(Overrides, prometheus_textfile)},
        };

        for (size_t i = 0; i < ELEMENTSOF(map); i++) {
                const char *v = *(const char *const *)((const char *)o + map[i].offset);
                _cleanup_free_ char *err = NULL;

                if (!v) {
                        continue;
                }
                if (config_set(c, map[i].section, map[i].key, v, &err) < 0) {
                        log_error("--%s: %s", map[i].key, err ? err : "invalid value");
                        return -EINVAL;
                }
        }
        return check_overridden(c);
}

/* manager_load_config(), whose messages are also left in @keep when it is not NULL (the
 * caller clears it). */
static int load_config(const char *path, const char *dropin, const Overrides *o, Config *ret,
                       ConfigDiag *keep)
{
        ConfigDiag diag = {0};
        Config c;
        int r;

        config_init_defaults(&c);
        r = config_load(&c, path, dropin, &diag);
        for (size_t i = 0; i < diag.n_messages; i++) {
                if (diag.messages[i].severity == CONFIG_SEVERITY_ERROR) {
                        log_error("%s", diag.messages[i].text);
                } else {
                        log_warning("%s", diag.messages[i].text);
                }
        }
        if (keep) {
                *keep = diag;
        } else {
                config_diag_clear(&diag);
        }
        if (r < 0) {
                return r;
        }
        r = apply_overrides(&c, o);
        if (r < 0) {
                return r;
        }
        *ret = c;
        return 0;
}

int manager_load_config(const char *path, const char *dropin, const Overrides *o, Config *ret)
{
        return load_config(path, dropin, o, ret, NULL);
}

/* Whether any probe has failed: a reload starts the probes again, as a retry. */
static bool any_probe_failed(const Manager *m)
{
        for (size_t i = 0; i < m->n_probes; i++) {
                if (probe_state(m->probes[i].probe) == PROBE_FAILED) {
                        return true;
                }
        }
        return false;
}

/* Stops the probes and starts them with the [probe] section of @c, or again with the running
 * one if that fails. Returns 0, 1 after going back to the running one, or a negative errno
 * when the loop must end: a probe did not stop (its thread still spins there), or none could
 * be started. */
static int probes_restart(Manager *m, const Config *c)
{
        Config old = m->config;
        int r;

        m->config.probe_cpus = c->probe_cpus;
        m->config.probe_priority = c->probe_priority;
        m->config.probe_threshold_ns = c->probe_threshold_ns;
        m->config.probe_preheat_ns = c->probe_preheat_ns;
        m->config.probe_counter = c->probe_counter;
        r = probes_stop(m);
        if (r < 0) {
                log_error("cannot restart the probes while one is still running; exiting");
                return r;
        }
        r = resolve_cpus(m);
        if (r < 0 || (r = probes_start(m)) < 0) {
                log_error("cannot start the probes with the new configuration; back to the "
                          "previous one");
                r = probes_stop(m);
                if (r < 0) {
                        return r;
                }
                m->config = old;
                (void)resolve_cpus(m);
                r = probes_start(m);
                return r < 0 ? r : 1;
        }
        return 0;
}

/* Whether @c differs from the running configuration in [probe] cpus only. */
static bool only_cpus_changed(const Manager *m, const Config *c)
{
        Config same = *c;

        same.probe_cpus = m->config.probe_cpus;
        return !config_equal(c, &m->config, "probe") && config_equal(&same, &m->config, "probe");
}

/* Probes the CPUs [probe] cpus of @c names: starts the probes of the new ones first, then stops
 * those of the CPUs dropped, and leaves the others running, so that their measurement and
 * history go on without a gap. When a new probe cannot start, the ones just started are
 * stopped and everything stays as it was: the running set keeps measuring. Returns 0, -EAGAIN
 * after such a roll-back, or another negative errno when the loop must end (a probe that did
 * not stop). */
static int probes_change_cpus(Manager *m, const Config *c)
{
        cpu_set_t old_cpus = m->cpus, old_config = m->config.probe_cpus;
        _cleanup_free_ ProbeCtl *next = NULL, *dropped = NULL;
        size_t n, k = 0, n_dropped = 0;
        int r;

        m->config.probe_cpus = c->probe_cpus;
        r = resolve_cpus(m);
        n = (size_t)CPU_COUNT(&m->cpus);
        if (r >= 0) {
                next = calloc(n, sizeof(*next));
                dropped = calloc(m->n_probes ? m->n_probes : 1, sizeof(*dropped));
                r = next && dropped ? 0 : -ENOMEM;
        }
        for (int cpu = 0; r >= 0 && cpu < CPU_SETSIZE; cpu++) {
                ProbeCtl *kept = NULL;

                if (!CPU_ISSET(cpu, &m->cpus)) {
                        continue;
                }
                for (size_t i = 0; i < m->n_probes; i++) {
                        if (m->probes[i].cpu == cpu && m->probes[i].probe) {
                                kept = &m->probes[i];
                        }
                }
                if (kept) {
                        next[k++] = *kept;
                        continue;
                }
                r = probe_ctl_start(m, &next[k++], cpu);
        }
        if (r < 0) {
                /* Stop only what was started here; the running probes were not touched. */
                for (size_t i = 0; i < k; i++) {
                        if (!CPU_ISSET(next[i].cpu, &old_cpus)) {
                                int q = probes_stop_array(&next[i], 1);

                                if (q < 0) {
                                        return q;
                                }
                        }
                }
                m->cpus = old_cpus;
                m->config.probe_cpus = old_config;
                log_error("cannot start the probes of the new CPU list; still probing CPU %s",
                          cpulist_format((char[256]){0}, 256, &m->cpus));
                return -EAGAIN;
        }
        for (size_t i = 0; i < m->n_probes; i++) {
                if (!CPU_ISSET(m->probes[i].cpu, &m->cpus)) {
                        dropped[n_dropped++] = m->probes[i];
                }
        }
        free(m->probes);
        m->probes = TAKE_PTR(next);
        m->n_probes = n;
        r = probes_stop_array(dropped, n_dropped);
        log_probing(m);
        pin_manager(m);
        return r;
}

int manager_reload(Manager *m, ConfigDiag *diag)
{
        ManagerReload result = MANAGER_RELOAD_APPLIED;
        bool restart, trace_restart;
        Config c;
        int r;

        notifier_state(m->notifier, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=reloading",
                       now_ns(CLOCK_MONOTONIC) / 1000);
        log_info("reloading the configuration from %s", m->config_path);
        r = load_config(m->config_path, m->dropin_dir, &m->overrides, &c, diag);
        if (r < 0) {
                result = MANAGER_RELOAD_KEPT;
                log_error("the configuration has errors; keeping the running configuration");
                c = m->config;
        } else if (!config_equal(&c, &m->config, "history") ||
                   !config_equal(&c, &m->config, "server")) {
                log_notice("changes to [history] and [server] take effect at the next start");
        }
        /* The history and every probe's slots count in the running counter's ticks: another
         * counter would mix two units in one histogram. */
        if (c.probe_counter != m->config.probe_counter) {
                log_notice("[probe] counter = %s takes effect at the next start; still %s",
                           counter_source_name(c.probe_counter),
                           counter_source_name(m->config.probe_counter));
                c.probe_counter = m->config.probe_counter;
        }
        trace_restart =
                !config_equal(&c, &m->config, "trace") || !config_equal(&c, &m->config, "probe");
        restart = !config_equal(&c, &m->config, "probe");
        if (restart && only_cpus_changed(m, &c) && !any_probe_failed(m)) {
                log_info("[probe] cpus changed: starting and stopping the probes of the CPUs "
                         "added and removed");
                r = probes_change_cpus(m, &c);
                if (r < 0 && r != -EAGAIN) {
                        (void)sd_event_exit(m->event, 1);
                        return r;
                }
                if (r == -EAGAIN) {
                        result = MANAGER_RELOAD_ROLLED_BACK;
                }
                /* After a roll-back the running [probe] stays, cpus and all. */
                c.probe_cpus = m->config.probe_cpus;
                restart = false;
        } else if (restart) {
                log_info("[probe] changed: restarting the probes");
        } else if (any_probe_failed(m)) {
                log_info("starting the failed probes again");
                restart = true;
        }
        if (restart) {
                r = probes_restart(m, &c);
                if (r < 0) {
                        (void)sd_event_exit(m->event, 1);
                        return r;
                }
                /* Files with errors say more than the failed probes restarted with them. */
                if (r == 1 && result == MANAGER_RELOAD_APPLIED) {
                        result = MANAGER_RELOAD_ROLLED_BACK;
                }
                pin_manager(m);
        }
        /* The recorder follows the probed CPUs and [trace]. */
        if (trace_restart) {
                m->config.trace_enabled = c.trace_enabled;
                manager_trace_stop(m);
                manager_trace_start(m);
        }
        memcpy(m->config.export_prometheus_textfile, c.export_prometheus_textfile,
               sizeof(c.export_prometheus_textfile));
        m->config.export_prometheus_textfile_interval_ns = c.export_prometheus_textfile_interval_ns;
        /* READY=1 ends the reload, and says again that every probe runs on its CPU. */
        arm_ready(m);
        update_status(m);
        return (int)result;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        (void)manager_reload(userdata, NULL);
        return 0;
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        Manager *m = userdata;

        log_info("received %s, stopping", strsignal((int)si->ssi_signo));
        notifier_state(m->notifier, "STOPPING=1\nSTATUS=stopping");
        m->stopping = true;
        return sd_event_exit(m->event, 0);
}

/* --- set-up ------------------------------------------------------------------------------- */

static const char *default_socket(char *buf, size_t size)
{
        const char *rt = getenv("XDG_RUNTIME_DIR");

        if (geteuid() == 0 || !rt || !*rt) {
                snprintf(buf, size, "/run/jitterd/io.jitterd");
        } else {
                snprintf(buf, size, "%s/jitterd/io.jitterd", rt);
        }
        return buf;
}

static int setup_server(Manager *m)
{
        VarlinkServerLimits lim;
        int n, r;

        varlink_server_limits_default(&lim);
        lim.max_message_bytes = m->config.server_max_message_bytes;
        lim.max_connections = m->config.server_max_clients;
        lim.idle_timeout_usec = m->config.server_idle_timeout_ns / 1000;
        /* The largest reply (10 000 events, a full diff-of-diff histogram) fits well within
         * this; a client that lets more pile up is not reading and is dropped. */
        lim.max_output_bytes = 4 * 1024 * 1024;
        r = varlink_server_new(m->event, &lim, &m->server);
        if (r < 0) {
                return r;
        }
        /* The URL names the documentation that ships with the package. */
        r = varlink_server_set_info(m->server, "jitterd", "jitterd", JITTERD_VERSION,
                                    "file:///usr/share/man/man8/jitterd.8.gz");
        if (r < 0) {
                return r;
        }
        n = sd_listen_fds(1);
        if (n > 1) {
                log_error("expected one socket from systemd, got %d", n);
                return -EINVAL;
        }
        if (n == 1) {
                r = varlink_server_listen_fd(m->server, SD_LISTEN_FDS_START);
                if (r < 0) {
                        log_error("cannot serve the socket passed by systemd: %s", strerror(-r));
                        return r;
                }
                snprintf(m->socket_path, sizeof(m->socket_path), "(socket-activated)");
                return 0;
        }
        if (m->config.server_socket[0]) {
                snprintf(m->socket_path, sizeof(m->socket_path), "%s", m->config.server_socket);
        } else {
                default_socket(m->socket_path, sizeof(m->socket_path));
        }
        r = varlink_server_listen_path(m->server, m->socket_path, 0660);
        if (r < 0) {
                log_error("cannot listen on %s: %s%s", m->socket_path, strerror(-r),
                          r == -EADDRINUSE ? " (another jitterd is running there)" : "");
                return r;
        }
        return 0;
}

/* Signals are handled by the event loop; they are blocked before any thread exists so that
 * every thread inherits the mask. */
static int add_signals(Manager *m)
{
        static const struct {
                int signal;
                sd_event_signal_handler_t handler;
        } handlers[] = {
                {SIGTERM, on_exit_signal},
                {SIGINT, on_exit_signal},
                {SIGHUP, on_sighup},
        };
        sigset_t mask;
        int r;

        sigemptyset(&mask);
        for (size_t i = 0; i < ELEMENTSOF(handlers); i++) {
                sigaddset(&mask, handlers[i].signal);
        }
        pthread_sigmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        for (size_t i = 0; i < ELEMENTSOF(handlers); i++) {
                r = sd_event_add_signal(m->event, NULL, handlers[i].signal, handlers[i].handler, m);
                if (r < 0) {
                        log_error("cannot handle %s: %s", strsignal(handlers[i].signal),
                                  strerror(-r));
                        return r;
                }
        }
        return 0;
}

/* What the probes need of this machine: the privileges, and a counter that measures time. */
static int check_host(Manager *m)
{
        _cleanup_free_ char *err = NULL;
        int r;

        r = privileges_check(m->config.probe_priority, m->config.server_loop_priority, &err);
        if (r < 0) {
                log_error("%s", err ? err : "missing privileges");
                return r;
        }
        r = counter_info_init(m->config.probe_counter, 10.0, 2000, &m->counter);
        if (r == -EOPNOTSUPP) {
                log_error("this CPU has no invariant TSC (CPUID 0x80000007 EDX bit 8): its ticks "
                          "are not time; set 'counter = clock' in [probe]");
                return r;
        } else if (r < 0) {
                log_error("no usable hardware counter here: %s; set 'counter = clock' in [probe]",
                          strerror(-r));
                return r;
        }
        return 0;
}

/* The history, restored from the last checkpoint. */
static int setup_history(Manager *m)
{
        HistoryOptions ho = {
                .interval_ns = m->config.history_interval_ns,
                .fine_retention_ns = m->config.history_fine_retention_ns,
                .coarse_interval_ns = HISTORY_COARSE_INTERVAL_NS,
                .coarse_retention_ns = m->config.history_coarse_retention_ns,
                .events_per_cpu = m->config.history_events_per_cpu,
        };
        int r;

        if (ho.coarse_interval_ns % ho.interval_ns != 0) {
                ho.coarse_interval_ns = ho.interval_ns * 60;
        }
        r = history_new(&ho, &m->history);
        if (r < 0) {
                log_error("cannot set up the history: %s", strerror(-r));
                return r;
        }
        checkpoint_load(m);
        return 0;
}

int manager_new(const Config *config, const char *config_path, const char *dropin_dir,
                const Overrides *overrides, Manager **ret)
{
        _cleanup_manager_ Manager *m = NULL;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m) {
                return -ENOMEM;
        }
        m->config = *config;
        m->config_path = config_path;
        m->dropin_dir = dropin_dir;
        m->overrides = *overrides;
        m->start_mono_ns = now_ns(CLOCK_MONOTONIC);
        m->start_real_ns = now_ns(CLOCK_REALTIME);

        r = resolve_cpus(m);
        if (r < 0) {
                return r;
        }
        r = check_host(m);
        if (r < 0) {
                return r;
        }
        if (m->config.server_admin_group[0]) {
                struct group *g = getgrnam(m->config.server_admin_group);

                if (!g) {
                        log_warning("admin_group '%s' does not exist; only root may reset",
                                    m->config.server_admin_group);
                } else {
                        m->admin_gid = g->gr_gid;
                        m->have_admin_gid = true;
                }
        }

        r = sd_event_default(&m->event);
        if (r < 0) {
                return r;
        }
        r = add_signals(m);
        if (r < 0) {
                return r;
        }
        /* Not sd_notify() nor sd_event_set_watchdog(), which sends with it: both block the loop
         * once the reader stops reading. WATCHDOG=1 comes from a timer of the loop, so a stuck
         * loop is still noticed. */
        r = notifier_new(m->event, &m->notifier);
        if (r < 0) {
                return r;
        }

        r = attrib_table_new(&m->attrib);
        if (r < 0) {
                return r;
        }
        r = host_files_new(ATTRIB_FILE_MAX, &m->attrib_files);
        if (r < 0) {
                return r;
        }
        r = setup_history(m);
        if (r < 0) {
                return r;
        }
        r = setup_server(m);
        if (r < 0) {
                return r;
        }
        r = admission_new(m->server, m->config.server_cpu_budget_percent, &m->admission);
        if (r < 0) {
                log_error("cannot set up the CPU budget of the clients: %s", strerror(-r));
                return r;
        }
        *ret = m;
        m = NULL;
        return 0;
}

int manager_run(Manager *m)
{
        uint64_t now = now_ns(CLOCK_MONOTONIC) / 1000;
        int r, status;

        r = privileges_lock_memory();
        if (r < 0) {
                log_error("cannot lock memory (mlockall): %s; grant CAP_IPC_LOCK or "
                          "LimitMEMLOCK=infinity",
                          strerror(-r));
                return 1;
        }
        r = set_loop_priority(m);
        if (r < 0) {
                return 1;
        }
        r = probes_start(m);
        if (r < 0) {
                return 1;
        }
        pin_manager(m);
        manager_trace_start(m);
        /* Root owns the tracefs instance; a daemon of another user granted CAP_DAC_OVERRIDE
         * (the trace drop-in) keeps it permitted, to make and remove the instance at a reload
         * that turns tracing on as well as at stop (privileges_dac() around them). */
        r = privileges_drop(m->config.probe_priority > 0, geteuid() != 0);
        if (r < 0) {
                log_warning("cannot drop capabilities: %s", strerror(-r));
        }
        r = sd_event_add_time(m->event, &m->ready_source, CLOCK_MONOTONIC, UINT64_MAX,
                              READY_POLL_USEC / 20, on_ready_poll, m);
        if (r >= 0) {
                arm_ready(m);
                r = sd_event_add_time(m->event, &m->tick_source, CLOCK_MONOTONIC,
                                      now + m->config.history_interval_ns / 1000, 1000, on_tick, m);
        }
        if (r >= 0) {
                r = sd_event_source_set_enabled(m->tick_source, SD_EVENT_ON);
        }
        if (r >= 0) {
                r = sd_event_add_time(m->event, &m->harvest_source, CLOCK_MONOTONIC, UINT64_MAX,
                                      100, on_harvest, m);
        }
        if (r >= 0 && m->config.history_checkpoint_ns > 0) {
                r = sd_event_add_time(m->event, &m->checkpoint_source, CLOCK_MONOTONIC,
                                      now + m->config.history_checkpoint_ns / 1000, 0,
                                      on_checkpoint, m);
                if (r >= 0) {
                        r = sd_event_source_set_enabled(m->checkpoint_source, SD_EVENT_ON);
                }
        }
        if (r < 0) {
                log_error("cannot set up the timers: %s", strerror(-r));
                return 1;
        }
        r = sd_event_loop(m->event);
        status = r < 0 ? 1 : r;
        if (!m->stopping) {
                notifier_state(m->notifier, "STOPPING=1");
                m->stopping = true;
        }
        /* Checkpoint first: stopping a probe that a higher-priority real-time task starves
         * takes time, and a stop that systemd ends with SIGKILL meanwhile must not lose the
         * history. */
        checkpoint(m);
        if (probes_stop(m) < 0) {
                status = 1;
        }
        m->stopped = true;
        if (notifier_flush(m->notifier, NOTIFY_EXIT_FLUSH_USEC) < 0) {
                log_warning("the service manager did not read STOPPING=1 within %llu s",
                            NOTIFY_EXIT_FLUSH_USEC / 1000000ULL);
        }
        return status;
}

Manager *manager_free(Manager *m)
{
        if (!m) {
                return NULL;
        }
        if (!m->stopped) {
                /* Checkpoint first, as in manager_run(). */
                if (m->history) {
                        checkpoint(m);
                }
                (void)probes_stop(m);
        }
        manager_trace_stop(m);
        cause_store_free(m->cause_store);
        ksyms_free(m->ksyms);
        admission_free(m->admission);
        varlink_server_free(m->server);
        sd_event_source_unref(m->tick_source);
        sd_event_source_unref(m->harvest_source);
        sd_event_source_disable_unref(m->drain_source);
        sd_event_source_unref(m->ready_source);
        sd_event_source_unref(m->checkpoint_source);
        notifier_free(m->notifier);
        sd_event_unref(m->event);
        history_free(m->history);
        attrib_table_free(m->attrib);
        host_files_free(m->attrib_files);
        free(m);
        return NULL;
}

int manager_add_interface(Manager *m, const char *name, const char *description_text,
                          const VarlinkMethod *methods, size_t n, void *userdata)
{
        int r = varlink_server_add_interface(m->server, name, description_text, methods, n);

        if (r < 0) {
                return r;
        }
        varlink_server_set_userdata(m->server, userdata);
        return 0;
}

void manager_reset(Manager *m, int cpu)
{
        history_reset(m->history, cpu);
        manager_trace_reset(m, cpu);
}

int manager_add_hooks(Manager *m, const ManagerHooks *hooks)
{
        if (m->n_hooks >= MANAGER_HOOKS_MAX) {
                return -ENOSPC;
        }
        m->hooks[m->n_hooks++] = *hooks;
        return 0;
}

/* --- accessors ---------------------------------------------------------------------------- */

const Config *manager_config(const Manager *m)
{
        return &m->config;
}

const CounterInfo *manager_counter(const Manager *m)
{
        return &m->counter;
}

const TickConv *manager_tickconv(const Manager *m)
{
        return &m->counter.conv;
}

double manager_drift_ppm(const Manager *m)
{
        return m->drift_ppm;
}

const History *manager_history(const Manager *m)
{
        return m->history;
}

const AttribTable *manager_attrib(const Manager *m)
{
        return m->attrib;
}

const VarlinkServer *manager_server(const Manager *m)
{
        return m->server;
}

void manager_admission_limits(const Manager *m, AdmissionLimits *ret)
{
        if (m->admission) {
                admission_limits(m->admission, ret);
        } else {
                *ret = (AdmissionLimits){0};
        }
}

void manager_charge_clients(Manager *m, uint64_t cpu_ns)
{
        if (m->admission) {
                admission_charge_heavy(m->admission, cpu_ns);
        }
}

const char *manager_socket_path(const Manager *m)
{
        return m->socket_path;
}

uint64_t manager_start_mono_ns(const Manager *m)
{
        return m->start_mono_ns;
}

uint64_t manager_start_real_ns(const Manager *m)
{
        return m->start_real_ns;
}

bool manager_admin_gid(const Manager *m, gid_t *ret)
{
        *ret = m->admin_gid;
        return m->have_admin_gid;
}

const cpu_set_t *manager_cpus(const Manager *m)
{
        return &m->cpus;
}

size_t manager_n_probes(const Manager *m)
{
        return m->n_probes;
}

int manager_probe_cpu(const Manager *m, size_t i)
{
        return m->probes[i].cpu;
}

void manager_probe_info(const Manager *m, size_t i, ProbeInfo *ret)
{
        const ProbeCtl *p = &m->probes[i];

        *ret = (ProbeInfo){
                .cpu = p->cpu,
                .probe = p->probe,
                .state = manager_probe_state(p),
                .offline = p->offline,
                .stalled = p->stalled,
                .samples_total = p->samples_total,
                .have_last = p->have_last,
                .last = &p->last,
                .last_attrib = &p->last_attrib,
                .last_start_ns = p->last_start_ns,
                .last_duration_ns = p->last_duration_ns,
        };
        ret->failed = manager_probe_failure(p, ret->failure, sizeof(ret->failure)) != NULL;
}
